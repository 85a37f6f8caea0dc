package weir.internal

import scala.collection.immutable.Queue as ScalaQueue

/**
 * The per-key bookkeeping of [[weir.TaskOrder.byKey]], as pure functions over the claims: the keys claimed
 * now, each with the entries parked behind it in input order. The claims and the count of parked entries
 * are fields of [[BufferState]], so that they change with the rest of the buffer in one compare-and-set,
 * and so that claiming a key on every take allocates no wrapper besides the map itself.
 *
 * Invariant: a key is present while its claimant runs its entries; the buffer's `parked` is the total
 * length of the queues. Only claimed keys are present, so the map is bounded by the number of workers,
 * not by the number of keys.
 */
private[weir] object KeyClaims:
  type Claims[A] = Map[Any, ScalaQueue[Entry[A]]]

  def empty[A]: Claims[A] = Map.empty

  /**
   * The entries parked behind `key` if it is claimed, `null` if it is free: a sentinel rather than an
   * `Option`, because every take under per-key admission asks this.
   */
  def behind[A](claims: Claims[A], key: Any): ScalaQueue[Entry[A]] = claims.getOrElse(key, null)

  /** Claims the free `key` (see [[behind]]). */
  def claim[A](claims: Claims[A], key: Any): Claims[A] = claims.updated(key, ScalaQueue.empty)

  /** Parks `e` behind its claimed key, whose queue is `queue` (see [[behind]]). */
  def park[A](claims: Claims[A], e: Entry[A], queue: ScalaQueue[Entry[A]]): Claims[A] =
    claims.updated(e.key, queue.enqueue(e))

  /** What the claimant of `key` gets next: the first entry parked behind it, or [[KeyReleased]]. */
  def next[A](claims: Claims[A], key: Any): KeyTurn[A] =
    val queue = claims.getOrElse(key, ScalaQueue.empty)
    if queue.isEmpty then KeyReleased else queue.head

  /**
   * Hands on `turn`, which is `next(claims, key)`: the parked entry leaves the key's queue (the key stays
   * claimed), or the key is freed. Taking `turn` spares the common case (nothing parked) a second lookup.
   */
  def advance[A](claims: Claims[A], key: Any, turn: KeyTurn[A]): Claims[A] =
    turn match
      case KeyReleased => claims - key
      case _ => claims.updated(key, claims(key).tail)

  /** Releases `e`'s key (its claimant gave it back untaken) and returns the entries parked behind it. */
  def release[A](claims: Claims[A], e: Entry[A]): (Claims[A], List[Entry[A]]) =
    if !e.keyed then (claims, Nil)
    else (claims - e.key, claims.get(e.key).fold(Nil)(_.toList))

  def tasks[A](claims: Claims[A]): Iterator[A] = claims.valuesIterator.flatMap(_.iterator.map(_.task))
