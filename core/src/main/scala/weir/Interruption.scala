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
  import Interruption.{Idle, Phase, Requested, Waiting}

  private val state = new AtomicReference[Phase](Idle)

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
            case waiting: Waiting => waiting.interrupt(reason)
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
    val waiting = new Waiting(interrupt, state)
    @tailrec def register(): () => Unit =
      state.get match
        case Requested(reason) =>
          interrupt(reason)
          Interruption.nothing
        case current =>
          if state.compareAndSet(current, waiting) then waiting else register()
    register()

  override def toString: String = requested.fold("Interruption(none)")(r => s"Interruption(requested: $r)")

private object Interruption:
  /** Where an interruption stands: no request and no registration, a registration waiting, or a request. */
  private sealed trait Phase
  private object Idle extends Phase
  private final case class Requested(reason: String) extends Phase

  /**
   * A registration waiting for a request; it is also its own undoing (the function [[onInterrupt]] returns),
   * so that a registration allocates one object.
   */
  private final class Waiting(val interrupt: String => Unit, state: AtomicReference[Phase])
      extends Phase,
        (() => Unit):
    def apply(): Unit = state.compareAndSet(this, Idle): Unit
  private val nothing: () => Unit = () => ()
