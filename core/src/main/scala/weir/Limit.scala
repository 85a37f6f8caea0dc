package weir

/**
 * How many tasks may run at once.
 *
 * A limit is a specification; each run of a pipeline turns it into its own controller, so one `Limit`
 * value can be shared between pipelines without coupling them. The limit of a running pipeline can be
 * changed at any time through [[Running.setLimit]]; adaptive limits (which tune themselves from
 * observed latency) plug in through the same controller.
 *
 * Semantics of a change while running:
 *   - raising the limit lets waiting tasks start at once (new workers are started if tasks are
 *     buffered);
 *   - lowering it never interrupts a running task: no new task starts until fewer than the new limit
 *     are in flight, and surplus workers retire as they finish.
 */
sealed abstract class Limit:
  /** The limit a run starts with. */
  def initial: Int

object Limit:

  /** At most `n` tasks in flight. */
  def fixed(n: Int): Limit =
    require(n > 0, s"concurrency limit must be > 0, was: $n")
    Fixed(n)

  /**
   * No limit: every buffered task starts as soon as it is taken from the buffer. Defined as the general
   * fixed limit at `Int.MaxValue`; workers are started lazily, so this does not allocate a worker per
   * possible slot.
   */
  val unbounded: Limit = Fixed(Int.MaxValue)

  private[weir] final case class Fixed(initial: Int) extends Limit:
    override def toString: String =
      if initial == Int.MaxValue then "Limit.unbounded" else s"Limit.fixed($initial)"
