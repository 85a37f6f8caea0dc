package weir.postgres.internal

import weir.postgres.Schedule

import java.time.Instant

/**
 * Which ticks a due schedule enqueues now, and where it goes next: a pure function of the row's timing,
 * its position and the server's clock, so that every scheduler computes the same plan for the same row.
 */
private[postgres] object Ticks:

  /** The ticks to enqueue, oldest first, and the row's next tick. */
  final case class Plan(ticks: Vector[Instant], next: Instant)

  /**
   * The latest `maxMissed` ticks that are at or after `next`, strictly after `last` and at or before `now`,
   * oldest first; the next tick is the first one after both `now` and `last`. Ticks at or before `last`
   * never come back, even if the server's clock went back or a changed timing moved `next` before `last`:
   * with the row's lock, this is what keeps a tick from being enqueued twice.
   */
  def plan(
      timing: Schedule.Timing,
      next: Instant,
      last: Option[Instant],
      now: Instant,
      maxMissed: Int
  ): Plan =
    def wanted(t: Instant) = !t.isBefore(next) && last.forall(t.isAfter)
    @annotation.tailrec
    def back(t: Option[Instant], acc: List[Instant]): List[Instant] = t match
      case Some(tick) if acc.size < maxMissed && wanted(tick) => back(timing.before(tick), tick :: acc)
      case _ => acc
    val ticks = back(timing.atOrBefore(now), Nil).toVector
    val from = last.filter(_.isAfter(now)).getOrElse(now)
    Plan(ticks, timing.after(from))
