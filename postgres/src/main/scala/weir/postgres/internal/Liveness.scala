package weir.postgres.internal

import scala.concurrent.duration.FiniteDuration

/**
 * What a worker knows of its own standing in the database, to decide whether one of its claims may still
 * start ([[weir.postgres.Job.tryStart]]): no claim that another worker may have rescued ever starts here.
 *
 * Another worker rescues this one's claims only once the database's record of this worker's heartbeat is
 * more than one `period` old (its session ended), or `deadAfter` old, or a claim's own lease has expired
 * (see [[Sql.rescue]]). The heartbeat beats twice per period and extends, at every beat, each lease to
 * more than a period ahead; and the database stamps a beat no earlier than the moment the worker sent
 * it. So while the last beat that committed was sent less than a period ago, by this process's clock, no
 * rescue of this worker can have happened. A claim starts only while that beat is younger than three
 * quarters of a period: the last quarter is the margin for the instant between this answer and the start.
 * A claim that the heartbeat has found rescued ([[Claims.taken]]) never starts either, whatever the beat's
 * age: its own state refuses it.
 *
 * A refusal costs a claim handed back uncounted; a worker whose heartbeat is late claims nothing until it
 * commits again ([[Claimer]]).
 */
private[postgres] final class Liveness(period: FiniteDuration):
  private val bound = period.toNanos / 4 * 3
  // the send time (monotonic nanoseconds) of the last beat that committed; written by one fiber at a time
  // (the registration, then the heartbeat's loop), read by any
  @volatile private var confirmedAt = System.nanoTime()

  /** A beat sent at `sentAt` (monotonic nanoseconds, read before sending it) has committed. */
  def confirmed(sentAt: Long): Unit = if sentAt - confirmedAt > 0 then confirmedAt = sentAt

  /** Whether the last committed beat is too old for a claim to start. */
  def stale: Boolean = System.nanoTime() - confirmedAt >= bound

  /** Why no claim may start now, if the last committed beat is too old for one to. */
  def refusal: Option[String] =
    val age = System.nanoTime() - confirmedAt
    if age < bound then None
    else
      Some(
        s"this worker's last heartbeat that committed is ${age /
            1000000} ms old (a claim starts below ${bound / 1000000} ms): its claims may have been rescued"
      )

private[postgres] object Liveness:
  val taken: String = "another worker rescued this claim, having taken this worker for dead"
