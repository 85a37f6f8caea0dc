package weir.internal

import scala.annotation.tailrec
import scala.annotation.unchecked.uncheckedVariance
import scala.collection.immutable.Queue as ScalaQueue

/**
 * The per-key bookkeeping of [[weir.TaskOrder.byKey]], as pure functions over the claims: the keys claimed
 * now, each with the entries parked behind it in input order. The claims and the count of parked entries
 * are fields of [[BufferState]], so that they change with the rest of the buffer in one compare-and-set.
 *
 * The claims are an immutable hash table of their own rather than a `Map`: every per-key task claims a key
 * when it is taken and releases it when it is done, so both are on the hot path, and a table of a few
 * buckets, each a short chain, is cheaper to change than a hash trie: a change copies the array of
 * buckets and the chain before the claim it changes, nothing else. The table keeps between √(4n) and
 * √(32n) buckets for n claims (8 at least), so that the array a change copies and the chain it walks stay
 * short together: 16 buckets of about 4 claims for the 64 keys of 64 workers.
 *
 * Invariant: a key is present while its claimant runs its entries; the buffer's `parked` is the total
 * length of the queues. Only claimed keys are present, so the table is bounded by the number of workers,
 * not by the number of keys.
 */
private[weir] object KeyClaims:

  /**
   * The claimed keys: `count` of them, chained in `buckets` by the hash of their key. Immutable: the array
   * is never written once built, which is what makes the variance sound.
   */
  final class Claims[+A] private[KeyClaims] (
      private[internal] val buckets: Array[Claim[A @uncheckedVariance]],
      val count: Int
  )

  /** A claimed key and the entries parked behind it; `next` is the next claim of its bucket, or null. */
  private[KeyClaims] final class Claim[+A](val key: Any, val parked: ScalaQueue[Entry[A]], val next: Claim[A])

  private val MinBuckets = 8

  // a table of b buckets doubles once it has b² / 4 claims, and halves below b² / 32 (a factor of two apart,
  // so that a count going up and down across one threshold does not resize it every time)
  private def full(count: Int, buckets: Int): Boolean = 4 * count >= buckets * buckets
  private def sparse(count: Int, buckets: Int): Boolean = buckets > MinBuckets &&
    32 * count < buckets * buckets

  private val Empty: Claims[Nothing] = Claims(new Array[Claim[Nothing]](MinBuckets), 0)

  def empty[A]: Claims[A] = Empty

  /**
   * The entries parked behind `key` if it is claimed, `None` if it is free. Every take under per-key
   * admission asks this; the common answer, a free key, allocates nothing.
   */
  def behind[A](claims: Claims[A], key: Any): Option[ScalaQueue[Entry[A]]] =
    val c = find(claims.buckets(bucket(key, claims.buckets.length)), key)
    if c == null then None else Some(c.parked)

  /** Claims the free `key` (see [[behind]]). */
  def claim[A](claims: Claims[A], key: Any): Claims[A] =
    if full(claims.count, claims.buckets.length) then
      claim(resized(claims, claims.buckets.length * 2), key)
    else
      val buckets = claims.buckets.clone()
      val i = bucket(key, buckets.length)
      buckets(i) = Claim(key, ScalaQueue.empty, buckets(i))
      Claims(buckets, claims.count + 1)

  /**
   * The claimant of `from`, with nothing parked behind it, is done with it and claims the free `to`
   * instead: the release and the claim in one change of the table (none when `to` is `from`).
   */
  def handOver[A](claims: Claims[A], from: Any, to: Any): Claims[A] =
    val i = bucket(from, claims.buckets.length)
    if to == from then claims
    else if find(claims.buckets(i), from) == null then claim(claims, to)
    else
      val buckets = claims.buckets.clone()
      buckets(i) = removedIn(buckets(i), from)
      val j = bucket(to, buckets.length)
      buckets(j) = Claim(to, ScalaQueue.empty, buckets(j))
      Claims(buckets, claims.count)

  /** Parks `e` behind its claimed key, whose queue is `queue` (see [[behind]]). */
  def park[A](claims: Claims[A], e: Entry[A], queue: ScalaQueue[Entry[A]]): Claims[A] =
    replaced(claims, e.key, queue.enqueue(e))

  /** What the claimant of `key` gets next: the first entry parked behind it, or [[Released]]. */
  def next[A](claims: Claims[A], key: Any): Handout[A] =
    val c = find(claims.buckets(bucket(key, claims.buckets.length)), key)
    if c == null || c.parked.isEmpty then Released else c.parked.head

  /**
   * Hands on `turn`, which is `next(claims, key)`: the parked entry leaves the key's queue (the key stays
   * claimed), or the key is freed.
   */
  def advance[A](claims: Claims[A], key: Any, turn: Handout[A]): Claims[A] =
    turn match
      case _: Entry[A] => behind(claims, key).fold(claims)(queue => replaced(claims, key, queue.tail))
      case _ => removed(claims, key)

  /** Releases `e`'s key (its claimant gave it back untaken) and returns the entries parked behind it. */
  def release[A](claims: Claims[A], e: Entry[A]): (Claims[A], List[Entry[A]]) =
    if !e.keyed then (claims, Nil)
    else
      behind(claims, e.key) match
        case None => (claims, Nil)
        case Some(queue) => (removed(claims, e.key), queue.toList)

  def tasks[A](claims: Claims[A]): Iterator[A] =
    all(claims).flatMap(_.parked.iterator.map(_.task))

  private def all[A](claims: Claims[A]): Iterator[Claim[A]] =
    claims.buckets.iterator.flatMap(first => Iterator.iterate(first)(_.next).takeWhile(_ != null))

  // the key's hash spread over the low bits, which pick the bucket (the number of buckets is a power of two)
  private def bucket(key: Any, buckets: Int): Int =
    val h = key.##
    (h ^ (h >>> 16)) & (buckets - 1)

  @tailrec private def find[A](c: Claim[A], key: Any): Claim[A] =
    if c == null || c.key == key then c else find(c.next, key)

  /** The claims with `key`'s queue replaced by `parked`; the same claims when `key` is not claimed. */
  private def replaced[A](claims: Claims[A], key: Any, parked: ScalaQueue[Entry[A]]): Claims[A] =
    val i = bucket(key, claims.buckets.length)
    if find(claims.buckets(i), key) == null then claims
    else
      val buckets = claims.buckets.clone()
      buckets(i) = replacedIn(buckets(i), key, parked)
      Claims(buckets, claims.count)

  /** The claims without `key` (the table halves when it is sparse); the same claims when it is not claimed. */
  private def removed[A](claims: Claims[A], key: Any): Claims[A] =
    val i = bucket(key, claims.buckets.length)
    if find(claims.buckets(i), key) == null then claims
    else
      val buckets = claims.buckets.clone()
      buckets(i) = removedIn(buckets(i), key)
      if sparse(claims.count - 1, buckets.length) then
        resized(Claims(buckets, claims.count - 1), buckets.length / 2)
      else Claims(buckets, claims.count - 1)

  // copy the chain up to `key`'s claim, which must be in it; the rest of the chain is shared
  private def replacedIn[A](c: Claim[A], key: Any, parked: ScalaQueue[Entry[A]]): Claim[A] =
    if c.key == key then Claim(key, parked, c.next)
    else Claim(c.key, c.parked, replacedIn(c.next, key, parked))

  private def removedIn[A](c: Claim[A], key: Any): Claim[A] =
    if c.key == key then c.next else Claim(c.key, c.parked, removedIn(c.next, key))

  private def resized[A](claims: Claims[A], length: Int): Claims[A] =
    val buckets = new Array[Claim[A]](length)
    all(claims).foreach { c =>
      val i = bucket(c.key, length)
      buckets(i) = Claim(c.key, c.parked, buckets(i))
    }
    Claims(buckets, claims.count)
