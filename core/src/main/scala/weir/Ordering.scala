package weir

/**
 * In which order a pipeline's outcomes are emitted, and what that costs.
 *
 *   - [[Ordering.unordered]] (the default): outcomes are emitted as tasks complete. No head-of-line
 *     blocking: a slow task holds only its own slot; every other slot keeps taking tasks.
 *   - [[Ordering.inputOrder]]: outcomes are emitted in the order tasks entered the buffer (with several
 *     producers, the order in which their tasks were interleaved into it). The reorder window `w`
 *     bounds the memory held for out-of-order results: a task with input position `p` starts only
 *     when every task before `p - w` has completed, so at most `w` outcomes are ever held back. A slow
 *     task therefore stalls new starts once `w` tasks past it have been started.
 */
sealed trait Ordering

object Ordering:

  /** Emit outcomes as tasks complete. */
  val unordered: Ordering = Unordered

  /** Emit outcomes in input order, with a reorder window of `window` tasks (default 1024). */
  def inputOrder(window: Int = Defaults.reorderWindow): Ordering =
    require(window > 0, s"reorder window must be > 0, was: $window")
    InputOrder(window)

  private[weir] case object Unordered extends Ordering:
    override def toString: String = "Ordering.unordered"

  private[weir] final case class InputOrder(window: Int) extends Ordering:
    override def toString: String = s"Ordering.inputOrder($window)"
