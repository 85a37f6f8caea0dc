package weir.internal

import scala.collection.immutable.Queue as ScalaQueue

/**
 * The per-key bookkeeping of [[weir.Ordering.byKey]]: the keys claimed now, each with the entries parked
 * behind it in input order, and how many entries are parked in all.
 *
 * Invariant: a key is present while its claimant runs its entries; `parked` is the total length of the
 * queues. Only claimed keys have an entry, so this is bounded by the number of workers, not of keys.
 * Immutable: it is part of the buffer's state and changes with it, in the same compare-and-set.
 */
private[weir] final class KeyClaims[A] private (claimed: Map[Any, ScalaQueue[Entry[A]]], val parked: Int):

  /**
   * Claims `e`'s key if it is free, else parks `e` behind it. The result has one more parked entry exactly
   * when `e` was parked.
   */
  def claimOrPark(e: Entry[A]): KeyClaims[A] =
    // `getOrElse` with `null` rather than `get`: no `Option` per task on the per-key path
    val behind = claimed.getOrElse(e.key, null)
    if behind == null then new KeyClaims(claimed.updated(e.key, ScalaQueue.empty), parked)
    else new KeyClaims(claimed.updated(e.key, behind.enqueue(e)), parked + 1)

  /** What [[advance]] hands on for `key`: the first entry parked behind it, or [[KeyReleased]]. */
  def next(key: Any): KeyTurn[A] =
    val behind = claimed.getOrElse(key, ScalaQueue.empty)
    if behind.isEmpty then KeyReleased else behind.head

  /** Hands [[next]] on (the key stays claimed), or frees the key when nothing is parked behind it. */
  def advance(key: Any): KeyClaims[A] =
    val behind = claimed.getOrElse(key, ScalaQueue.empty)
    if behind.isEmpty then new KeyClaims(claimed - key, parked)
    else new KeyClaims(claimed.updated(key, behind.tail), parked - 1)

  /** Releases `e`'s key (its claimant gave it back untaken) and returns the entries parked behind it. */
  def release(e: Entry[A]): (KeyClaims[A], List[Entry[A]]) =
    if !e.keyed then (this, Nil)
    else
      val behind = claimed.get(e.key).fold(Nil)(_.toList)
      (new KeyClaims(claimed - e.key, parked - behind.size), behind)

  def tasks: Iterator[A] = claimed.valuesIterator.flatMap(_.iterator.map(_.task))

private[weir] object KeyClaims:
  def empty[A]: KeyClaims[A] = new KeyClaims(Map.empty, 0)
