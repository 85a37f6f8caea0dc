package weir.lab
package compare

/** How one run of one approach ended. */
enum Status:
  case Ok

  /** No progress at all while every thread of its pool was blocked (or, in virtual time, no fiber could run). */
  case Deadlocked

  /** Still running at the run's time limit. */
  case TimedOut

  /** It failed, or consumed some task other than exactly once. */
  case Failed(reason: String)

  def label: String = this match
    case Ok => "ok"
    case Deadlocked => "deadlocked"
    case TimedOut => "timed out"
    case Failed(_) => "failed"

/**
 * One run of one approach on one load shape.
 *
 * @param makespanMs from the first produce to the last consume, in real (or virtual) ms; NaN unless `Ok`
 * @param idealMs    the ideal schedule's makespan for the same delays and the approach's producer count, in
 *                   the same (scaled) ms
 * @param boundedIdealMs the [[scenarios.BoundedIdeal]]'s makespan, in the same ms, when the workload's
 *                   buffer is smaller than a burst ([[scenarios.Workload.bufferBelowBurst]])
 * @param ownOrderMs the ideal's model with the tasks started in the order this run started them
 *                   ([[scenarios.Ideal.inOrder]]), in the same ms: a lower bound of this run, where
 *                   `idealMs` is not one when the run served tasks in another order; None unless `Ok`
 * @param peakThreads  the JVM's peak live threads during the run; None when load shapes ran side by side
 *                     (`--parallel`), where the JVM's peaks are not one approach's own
 * @param peakHeapMiB  the peak heap used during the run, in MiB; None as for `peakThreads`
 * @param peakInFlight the most tasks consuming at once (the approach's real concurrency)
 * @param produced   when each batch was handed over (ns from the start), for the timeline
 * @param consumed   when each task finished (ns from the start), for the timeline
 */
final case class Measurement(
    scenario: String,
    approach: String,
    run: Int,
    producers: Int,
    makespanMs: Double,
    idealMs: Double,
    boundedIdealMs: Option[Double],
    ownOrderMs: Option[Double],
    status: Status,
    peakThreads: Option[Int],
    peakHeapMiB: Option[Long],
    peakInFlight: Int,
    produced: Vector[Long],
    consumed: Vector[Long]
):
  def ratio: Double = over(Some(idealMs))

  /** The makespan over the bounded ideal's; NaN when there is none. */
  def boundedRatio: Double = over(boundedIdealMs)

  /** The makespan over the ideal of this run's own start order: at least 1 for every run. */
  def ownOrderRatio: Double = over(ownOrderMs)

  private def over(ms: Option[Double]): Double =
    ms.filter(_ > 0).fold(Double.NaN)(d => if status == Status.Ok then makespanMs / d else Double.NaN)
