package weir

import java.util.concurrent.atomic.AtomicReference
import scala.annotation.tailrec

/**
 * The switch an [[Interruptible]] task can hold: [[request]] tells it to stop, from any thread, once; the
 * engine's registration ([[onInterrupt]]) hears of it whether it comes before the attempt, during it or
 * between two attempts; and [[requested]] answers a refusal. Lock-free: every transition is one
 * compare-and-set, and a request and a registration that race meet in exactly one of them.
 */
final class Interruption:
  import Interruption.{Idle, Requested, Waiting}

  private val state = new AtomicReference[AnyRef](Idle)

  /**
   * Tells the task to stop for `reason`: an attempt running now is interrupted, and a later registration
   * is interrupted at once. True for the first request; a later one changes nothing and is false.
   */
  @tailrec def request(reason: String): Boolean =
    state.get match
      case _: Requested => false
      case current =>
        if state.compareAndSet(current, Requested(reason)) then
          current match
            case Waiting(interrupt) => interrupt(reason)
            case _ => ()
          true
        else request(reason)

  /** The reason of the request, if the task was told to stop. */
  def requested: Option[String] =
    state.get match
      case Requested(reason) => Some(reason)
      case _ => None

  /** As [[Interruptible.onInterrupt]]: calls `interrupt` at once if a request came first. */
  def onInterrupt(interrupt: String => Unit): () => Unit =
    val waiting = Waiting(interrupt)
    @tailrec def register(): () => Unit =
      state.get match
        case Requested(reason) =>
          interrupt(reason)
          Interruption.nothing
        case current =>
          if state.compareAndSet(current, waiting) then () => state.compareAndSet(waiting, Idle): Unit
          else register()
    register()

  override def toString: String = requested.fold("Interruption(none)")(r => s"Interruption(requested: $r)")

private object Interruption:
  private object Idle
  private final case class Waiting(interrupt: String => Unit)
  private final case class Requested(reason: String)
  private val nothing: () => Unit = () => ()
