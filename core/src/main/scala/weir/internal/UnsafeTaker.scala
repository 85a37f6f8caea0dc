package weir.internal

import java.util.concurrent.atomic.AtomicInteger

/**
 * A parked taker of the [[TaskBuffer]]: the waiting fiber's callback, settled exactly once — with an
 * entry, with `None` ("look again"), or by the taker giving up when cancelled — by a compare-and-set.
 * Settling is a plain call, so entries are handed over without an effect.
 *
 * The race it resolves: a taker cancelled at the moment an entry is handed to it. When the taker gave up
 * first, whoever hands it an entry gives the entry back instead; when the entry came first, the giving-up
 * taker gives it back itself (Cats Effect runs an `async` finalizer only when the callback's result will
 * not be received), so an entry handed over at the moment of a cancellation is served again, never lost.
 */
private[weir] final class UnsafeTaker[A](
    callback: Either[Throwable, Option[Entry[A]]] => Unit,
    giveBack: Entry[A] => Unit
) extends AtomicInteger(UnsafeTaker.Open):
  import UnsafeTaker.*

  // written before the compare-and-set that settles the taker as Handed, read only after seeing Handed
  private var handed: Entry[A] = scala.compiletime.uninitialized

  def handOver(entry: Entry[A]): Unit =
    handed = entry
    if compareAndSet(Open, Handed) then callback(Right(Some(entry))) else giveBack(entry)

  def lookAgain(): Unit = if compareAndSet(Open, LookedAgain) then callback(Right(None))

  def abandon(): Unit =
    if !compareAndSet(Open, Abandoned) && get() == Handed then giveBack(handed)

private[weir] object UnsafeTaker:
  private val Open = 0
  private val Handed = 1
  private val LookedAgain = 2
  private val Abandoned = 3

  /** Takers served by a state change, each with its entry: hand them over once the change is made. */
  type Served[A] = List[(UnsafeTaker[A], Entry[A])]

  def handOver[A](served: Served[A]): Unit = served.foreach((taker, entry) => taker.handOver(entry))
