package weir

/**
 * In which order a pipeline runs tasks and emits their outcomes, and what that costs.
 *
 *   - [[TaskOrder.unordered]] (the default): outcomes are emitted as tasks complete. No head-of-line
 *     blocking: a slow task holds only its own slot; every other slot keeps taking tasks.
 *   - [[TaskOrder.inputOrder]]: outcomes are emitted in the order tasks entered the buffer (with several
 *     producers, the order in which their tasks were interleaved into it). The reorder window `w`
 *     bounds the memory held for out-of-order results: a task with input position `p` starts only
 *     when every task before `p - w` has completed, so at most `w` outcomes are ever held back. A slow
 *     task therefore stalls new starts once `w` tasks past it have been started.
 *   - [[TaskOrder.byKey]]: tasks with the same key run one at a time, in input order; tasks with different
 *     keys run concurrently, within the pipeline's limit. A task whose key is busy is parked, without a
 *     slot, until the tasks of its key before it have finished, so a slow key holds one slot and never
 *     blocks other keys. Parked tasks still count against the buffer's capacity (they have not started),
 *     which bounds them; the bookkeeping is one queue per key that has a task running, so it is bounded by
 *     the limit, not by the number of distinct keys. Outcomes are emitted as tasks complete (so in input
 *     order within each key).
 */
sealed trait TaskOrder[-A]:
  /**
   * What is wrong with this order, each bad value named (empty when it is valid): the run that uses it fails
   * to start with an [[InvalidSettings]] listing these.
   */
  def errors: List[String] = Nil

object TaskOrder:

  /** Emit outcomes as tasks complete. */
  val unordered: TaskOrder[Any] = Unordered

  /** Emit outcomes in input order, with a reorder window of [[Defaults.reorderWindow]]`(limit)` tasks. */
  def inputOrder: TaskOrder[Any] = InputOrder(None)

  /** Emit outcomes in input order, with a reorder window of `window` tasks (> 0, checked when a run starts). */
  def inputOrder(window: Int): TaskOrder[Any] = InputOrder(Some(window))

  /**
   * Run the tasks of each key one at a time, in input order; different keys concurrently.
   *
   * `key` should be pure and cheap (a field, a hash): it is evaluated as a task is taken from the buffer,
   * inside the buffer's compare-and-set, so a take that loses a race with another worker evaluates it
   * again. Keys are compared with `==` and `hashCode`. A `key` that throws fails that task only.
   */
  def byKey[A, K](key: A => K): TaskOrder[A] = ByKey(key)

  private[weir] case object Unordered extends TaskOrder[Any]:
    override def toString: String = "TaskOrder.unordered"

  private[weir] final case class InputOrder(window: Option[Int]) extends TaskOrder[Any]:
    override def errors: List[String] =
      window.toList.flatMap(w => Validation.check(w > 0, s"reorder window must be > 0, was: $w"))
    override def toString: String = window.fold("TaskOrder.inputOrder")(w => s"TaskOrder.inputOrder($w)")

  private[weir] final case class ByKey[A, K](key: A => K) extends TaskOrder[A]:
    override def toString: String = "TaskOrder.byKey"
