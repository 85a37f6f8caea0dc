package weir.postgres

import com.cronutils.model.CronType
import com.cronutils.model.definition.CronDefinitionBuilder
import com.cronutils.model.time.ExecutionTime
import com.cronutils.parser.CronParser

import weir.{InvalidSettings, Validation}

import java.time.{Instant, ZoneId}
import scala.concurrent.duration.*
import scala.jdk.OptionConverters.*

/**
 * A periodic task: every tick of `timing`, one task with `payload` is enqueued to `queue`, once, however
 * many processes declare the schedule (see [[Scheduler]]). Built with [[Schedule.cron]] or
 * [[Schedule.every]], by name:
 *
 * {{{
 * Schedule.cron("nightly-report", "0 3 * * *", queue = "reports", payload = Report("daily"))
 * Schedule.every("refresh-rates", 10.minutes, queue = "rates", payload = Refresh(), missed = Schedule.Missed.catchUp(6))
 * }}}
 *
 * Each tick's task carries the unique key `schedule:<name>:<tick in epoch milliseconds>`, runs no earlier
 * than its tick, and has the headers `weir.schedule` (the name) and `weir.tick` (the tick, ISO-8601 UTC)
 * besides `headers`, which the tick's win. `priority`, `maxAttempts`, `orderingKey` and `headers` mean
 * what they mean in a [[NewTask]], and are checked the same way.
 *
 * Building a schedule never throws: a bad one (an empty name or queue, a cron expression that does not parse,
 * an interval that is not whole positive milliseconds, the task's own bad values) lists what is wrong in
 * [[errors]], and [[Scheduler.resource]] fails with one [[weir.InvalidSettings]] naming every bad value of
 * every schedule, before it touches the database. A bad schedule's `timing` cannot be used: its methods throw
 * that error.
 */
final class Schedule private (
    val name: String,
    val queue: String,
    val timing: Schedule.Timing,
    /** The payload as JSON, encoded once by the payload's [[PayloadCodec]]. */
    val payloadJson: String,
    val missed: Schedule.Missed,
    val priority: Int,
    val maxAttempts: Int,
    val orderingKey: Option[String],
    val headers: Map[String, String],
    problems: List[String]
):

  /** What is wrong with this schedule, each bad value named with the schedule's name; empty when valid. */
  def errors: List[String] = problems

  override def toString: String = s"Schedule($name, $timing, queue = $queue, missed = $missed)"

object Schedule:

  /** `UTC`, the zone cron expressions are read in unless a schedule names another. */
  val utc: ZoneId = ZoneId.of("UTC")

  /**
   * Ticks at the times a Unix cron expression names (five fields: minute, hour, day of month, month, day of
   * week; `*`, lists, ranges, steps and names such as `MON` or `JAN`), read in `zone` (default UTC).
   * An expression that does not parse is named, with the schedule, in [[Schedule.errors]].
   */
  def cron[A](
      name: String,
      expression: String,
      queue: String,
      payload: A,
      zone: ZoneId = Schedule.utc,
      missed: Missed = Missed.skip,
      priority: Int = 0,
      maxAttempts: Int = NewTask.defaultMaxAttempts,
      orderingKey: Option[String] = None,
      headers: Map[String, String] = Map.empty
  )(using codec: PayloadCodec[A]): Schedule =
    of(
      name,
      queue,
      Timing.parseCron(name, expression, zone),
      payload,
      missed,
      priority,
      maxAttempts,
      orderingKey,
      headers
    )

  /**
   * Ticks every `interval` (whole milliseconds, at least 1 ms), at the multiples of the interval since the
   * Unix epoch (UTC): `every(1.hour)` ticks on the hour, `every(1.day)` at midnight UTC, whenever the
   * processes start. An interval that is not whole positive milliseconds is named, with the schedule, in
   * [[Schedule.errors]].
   */
  def every[A](
      name: String,
      interval: FiniteDuration,
      queue: String,
      payload: A,
      missed: Missed = Missed.skip,
      priority: Int = 0,
      maxAttempts: Int = NewTask.defaultMaxAttempts,
      orderingKey: Option[String] = None,
      headers: Map[String, String] = Map.empty
  )(using codec: PayloadCodec[A]): Schedule =
    of(
      name,
      queue,
      Timing.parseEvery(name, interval),
      payload,
      missed,
      priority,
      maxAttempts,
      orderingKey,
      headers
    )

  private def of[A](
      name: String,
      queue: String,
      timing: Either[List[String], Timing],
      payload: A,
      missed: Missed,
      priority: Int,
      maxAttempts: Int,
      orderingKey: Option[String],
      headers: Map[String, String]
  )(using codec: PayloadCodec[A]): Schedule =
    val errors =
      nameErrors(name) ++ timing.left.getOrElse(Nil) ++
        Validation.check(
          queue != null && queue.nonEmpty,
          s"queue of schedule '$name' must not be empty, was: '$queue'"
        ) ++
        (if missed == null then List(s"missed of schedule '$name' must be a policy, was: null")
         else missed.errors.map(e => s"missed of schedule '$name': $e")) ++
        // the task's own checks, with their messages: every tick's task must be one a NewTask could be
        NewTask(
          payload,
          priority = priority,
          maxAttempts = maxAttempts,
          orderingKey = orderingKey,
          headers = headers
        ).errors.map(e => s"schedule '$name': $e")
    new Schedule(
      name,
      queue,
      timing.fold(Timing.Invalid(_), identity),
      codec.encode(payload),
      missed,
      priority,
      maxAttempts,
      orderingKey,
      headers,
      errors
    )

  private def nameErrors(name: String): List[String] =
    Validation.check(name != null && name.nonEmpty, s"schedule name must not be empty, was: '$name'")

  /** When a schedule ticks. */
  sealed trait Timing:
    /** The first tick strictly after `t`. */
    def after(t: Instant): Instant

    /** The last tick at or before `t`, if there is one. */
    def atOrBefore(t: Instant): Option[Instant]

    /** The last tick strictly before `t`, if there is one. */
    def before(t: Instant): Option[Instant]

  object Timing:

    /** A Unix cron expression read in `zone`. */
    final class Cron private[Schedule] (val expression: String, val zone: ZoneId, execution: ExecutionTime)
        extends Timing:
      def after(t: Instant): Instant =
        execution
          .nextExecution(t.atZone(zone))
          .toScala
          .map(_.toInstant)
          .getOrElse(throw new IllegalStateException(s"cron '$expression' has no tick after $t"))
      def atOrBefore(t: Instant): Option[Instant] = before(t.plusNanos(1))
      def before(t: Instant): Option[Instant] =
        execution.lastExecution(t.atZone(zone)).toScala.map(_.toInstant)
      override def toString: String = s"$expression ($zone)"
      override def equals(other: Any): Boolean = other match
        case c: Cron => c.expression == expression && c.zone == zone
        case _ => false
      override def hashCode: Int = (expression, zone).hashCode

    /** Every `millis` milliseconds, at the multiples of `millis` since the epoch. */
    final case class Every private[Schedule] (millis: Long) extends Timing:
      def after(t: Instant): Instant =
        Instant.ofEpochMilli((Math.floorDiv(t.toEpochMilli, millis) + 1) * millis)
      def atOrBefore(t: Instant): Option[Instant] =
        Some(Instant.ofEpochMilli(Math.floorDiv(t.toEpochMilli, millis) * millis))
      def before(t: Instant): Option[Instant] =
        // a tick is on a whole millisecond: one strictly before t is at or before t less a nanosecond
        atOrBefore(t.minusNanos(1))
      override def toString: String = s"every ${millis.millis.toCoarsest}"

    /** The timing of a schedule whose settings are bad: it has no ticks, and every use throws them. */
    private[postgres] final case class Invalid(errors: List[String]) extends Timing:
      private def refuse = throw new InvalidSettings("Schedule", errors)
      def after(t: Instant): Instant = refuse
      def atOrBefore(t: Instant): Option[Instant] = refuse
      def before(t: Instant): Option[Instant] = refuse
      override def toString: String = "invalid"

    private lazy val parser = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX))

    private[postgres] def parseCron(
        name: String,
        expression: String,
        zone: ZoneId
    ): Either[List[String], Cron] =
      val zoneErrors = Validation.check(zone != null, s"zone of schedule '$name' must not be null")
      val parsed =
        try Right(parser.parse(expression).validate())
        catch
          case e: IllegalArgumentException =>
            Left(List(
              s"cron expression of schedule '$name' does not parse (Unix cron: minute hour day-of-month month day-of-week), was: '$expression': ${e.getMessage}"
            ))
          case _: NullPointerException =>
            Left(List(s"cron expression of schedule '$name' must not be null"))
      parsed match
        case Right(cron) if zoneErrors.isEmpty =>
          Right(new Cron(expression, zone, ExecutionTime.forCron(cron)))
        case other => Left(zoneErrors ++ other.left.getOrElse(Nil))

    private[postgres] def parseEvery(name: String, interval: FiniteDuration): Either[List[String], Every] =
      val errors =
        if interval == null then List(s"interval of schedule '$name' must be at least 1 ms, was: null")
        else
          Validation.check(
            interval >= 1.millisecond,
            s"interval of schedule '$name' must be at least 1 ms, was: $interval"
          ) ++
            Validation.check(
              interval.toNanos % 1000000L == 0L,
              s"interval of schedule '$name' must be whole milliseconds, was: $interval"
            )
      if errors.isEmpty then Right(Every(interval.toMillis)) else Left(errors)

    /** [[parseCron]] for a timing known to be good (a stored row's); throws [[InvalidSettings]] otherwise. */
    private[postgres] def cron(name: String, expression: String, zone: ZoneId): Cron =
      parseCron(name, expression, zone).fold(
        errors => throw new InvalidSettings("Schedule", errors),
        identity
      )

    /** [[parseEvery]] for a timing known to be good (a stored row's); throws [[InvalidSettings]] otherwise. */
    private[postgres] def every(name: String, interval: FiniteDuration): Every =
      parseEvery(name, interval).fold(errors => throw new InvalidSettings("Schedule", errors), identity)

    /** A timing as its row stores it: `(cron, zone)` or `every_ms`; throws for a bad one. */
    private[postgres] def fromColumns(
        name: String,
        cron: Option[String],
        zone: Option[String],
        everyMs: Option[Long]
    ): Timing =
      (cron, zone, everyMs) match
        case (Some(expression), Some(id), None) => Timing.cron(name, expression, ZoneId.of(id))
        case (None, None, Some(ms)) => Timing.every(name, ms.millis)
        case other => throw new IllegalStateException(s"schedule '$name' has no timing: $other")

  /**
   * Which of the ticks that fell due while no scheduler ran (or while they were late) are enqueued. Either
   * way the next tick is the first one after the server's clock: a schedule never falls further behind.
   */
  sealed trait Missed:
    /** How many of the latest due ticks are enqueued, at most. */
    def maxMissed: Int

    /** What is wrong with this policy, naming the value; empty when it is valid. */
    def errors: List[String] = Validation.check(maxMissed >= 1, s"maxMissed must be >= 1, was: $maxMissed")

  object Missed:

    /**
     * Only the latest due tick is enqueued; older ones are dropped. A scheduler that looks a whole period
     * late (a 1-second schedule on a starved machine) drops ticks too.
     */
    case object Skip extends Missed:
      def maxMissed: Int = 1
      override def toString: String = "skip"

    /** The latest `maxMissed` due ticks are enqueued, oldest first, each with its own unique key. */
    final case class CatchUp private[Missed] (maxMissed: Int) extends Missed:
      override def toString: String = s"catch up $maxMissed"

    val skip: Missed = Skip

    /** At most `maxMissed` (at least 1, checked with the schedule) missed ticks enqueued after a downtime. */
    def catchUp(maxMissed: Int): Missed = CatchUp(maxMissed)
