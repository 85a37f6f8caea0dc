package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.{Schedule, Schema}

import java.time.Instant

/**
 * The statements of periodic tasks, for one schema (the `schedules` table: see its migration). A tick is
 * one transaction: [[lockDue]] locks one due row (skipping rows another scheduler holds), then [[tick]]
 * inserts the ticks' tasks and moves the row past them. Rows are matched by name only: every scheduler
 * ticks from the row's definition, so that all of them agree on the ticks whatever they declared.
 */
private[postgres] final class ScheduleSql(schema: Schema):
  import ScheduleSql.*

  private val schedules = schema("schedules")
  private def const(s: String): Fragment = Fragment.const0(s)

  /** The server's clock: what decides when a tick is due. */
  val now: ConnectionIO[Instant] = sql"SELECT now()".query[Instant].unique

  /**
   * Writes `s` as its row: a new name is inserted with `first` as its next tick; the same definition
   * changes nothing (not even `updated_at`); another one replaces the row's, and a changed timing starts
   * again from `first` (the tick itself never enqueues a tick at or before `last_tick`, whatever
   * `next_tick` says). Returns whether the row was written.
   */
  def declare(s: Schedule, first: Instant): ConnectionIO[Boolean] =
    val (cron, zone, everyMs) = columns(s.timing)
    val headers = HeaderCodec.encode(s.headers)
    val missed = s.missed match
      case Schedule.Missed.Skip => "skip"
      case _ => "catch-up"
    (const(
      s"INSERT INTO $schedules AS s (name, queue, payload, priority, max_attempts, ordering_key, headers, cron, zone, every_ms, missed, max_missed, next_tick) VALUES ("
    ) ++
      fr0"${s.name}, ${s.queue}, ${s.payloadJson}::jsonb, ${s.priority}::smallint, ${s.maxAttempts}, " ++
      fr0"${s.orderingKey}, $headers::jsonb, $cron, $zone, $everyMs, $missed, ${s.missed.maxMissed}, $first" ++
      const(
        """)
      ON CONFLICT (name) DO UPDATE SET
        queue = excluded.queue, payload = excluded.payload, priority = excluded.priority,
        max_attempts = excluded.max_attempts, ordering_key = excluded.ordering_key, headers = excluded.headers,
        cron = excluded.cron, zone = excluded.zone, every_ms = excluded.every_ms,
        missed = excluded.missed, max_missed = excluded.max_missed,
        next_tick = CASE WHEN (s.cron, s.zone, s.every_ms) IS DISTINCT FROM (excluded.cron, excluded.zone, excluded.every_ms)
                         THEN excluded.next_tick ELSE s.next_tick END,
        updated_at = now()
      WHERE (s.queue, s.payload, s.priority, s.max_attempts, s.ordering_key, s.headers, s.cron, s.zone, s.every_ms,
             s.missed, s.max_missed)
        IS DISTINCT FROM
            (excluded.queue, excluded.payload, excluded.priority, excluded.max_attempts, excluded.ordering_key,
             excluded.headers, excluded.cron, excluded.zone, excluded.every_ms, excluded.missed, excluded.max_missed)"""
      )).update.run
      .map(_ == 1)

  /**
   * Locks the first due row among `names` (`next_tick <= now()`), skipping the rows another scheduler is
   * ticking, and returns it with the server's `now()`. The transaction also gets an idle timeout of
   * `idleMillis`: should this process stop between its statements (a kill -STOP, a long pause, a network
   * cut off without a close), the server ends its session and frees the row for the others, rather than
   * holding the schedule until TCP gives up.
   */
  def lockDue(names: Array[String], idleMillis: Long): ConnectionIO[Option[Due]] =
    (const(
      "SELECT s.name, s.cron, s.zone, s.every_ms, s.max_missed, s.last_tick, s.next_tick, now() FROM "
    ) ++
      fr0"set_config('idle_in_transaction_session_timeout', ${idleMillis.toString}, true) AS c, " ++
      const(s"$schedules AS s WHERE s.name = ANY(") ++ fr0"$names" ++
      const(") AND s.next_tick <= now() ORDER BY s.next_tick LIMIT 1 FOR UPDATE OF s SKIP LOCKED"))
      .query[Due]
      .option

  /**
   * Enqueues the ticks `ticks` (epoch milliseconds, oldest first) of the row `name`, locked by this
   * transaction, through the schema's `enqueue` function with their unique keys, and moves the row on:
   * `last_tick` to the newest of them, `next_tick` to `next`. Returns how many tasks were inserted (a tick
   * whose key an unfinished task already holds inserts none).
   */
  def tick(name: String, ticks: Array[Long], next: Instant): ConnectionIO[Int] =
    val texts = ticks.map(ms => Instant.ofEpochMilli(ms).toString)
    val last = ticks.lastOption.map(Instant.ofEpochMilli)
    (const(s"""WITH enqueued AS (
      SELECT e.inserted
      FROM $schedules AS s
      CROSS JOIN unnest(""") ++ fr0"$ticks::bigint[], $texts::text[]" ++
      const(s""") WITH ORDINALITY AS k(ms, text, n)
      CROSS JOIN LATERAL ${schema("enqueue")}(
        s.queue, s.payload, s.priority, timestamptz 'epoch' + k.ms * interval '1 millisecond', s.max_attempts,
        s.ordering_key, 'schedule:' || s.name || ':' || k.ms,
        coalesce(s.headers, '{}'::jsonb) || jsonb_build_object('weir.schedule', s.name, 'weir.tick', k.text)) AS e
      WHERE s.name = """) ++ fr0"$name" ++ const(s"""
    ), moved AS (
      -- a data-modifying WITH runs to completion whether or not it is read
      UPDATE $schedules SET last_tick = coalesce(""") ++ fr0"$last" ++ const(", last_tick), next_tick = ") ++
      fr0"$next" ++ const(s""",
        ticks = ticks + (SELECT count(*) FILTER (WHERE inserted) FROM enqueued)
      WHERE name = """) ++ fr0"$name" ++ const(""" RETURNING 1)
    SELECT (SELECT count(*) FILTER (WHERE inserted) FROM enqueued)::int""")).query[Int].unique

  /**
   * Milliseconds from the server's `now()` to the earliest tick among `names` not yet due; `None` if every
   * row is due or there is none.
   */
  def untilNext(names: Array[String]): ConnectionIO[Option[Long]] =
    (const(
      "SELECT (ceil(extract(epoch FROM min(next_tick) - now()) * 1000))::bigint FROM "
    ) ++ const(s"$schedules WHERE name = ANY(") ++ fr0"$names" ++ const(") AND next_tick > now()"))
      .query[Option[Long]]
      .unique

  /** Every row, by name, as [[Row]]s. */
  def list: ConnectionIO[Vector[Row]] =
    const(
      s"""SELECT name, queue, cron, zone, every_ms, max_missed, missed, last_tick, next_tick, ticks
      FROM $schedules ORDER BY name"""
    ).query[Row].to[Vector]

private[postgres] object ScheduleSql:

  /** A locked due row: its timing's columns, policy and position, and the server's `now()`. */
  final case class Due(
      name: String,
      cron: Option[String],
      zone: Option[String],
      everyMs: Option[Long],
      maxMissed: Int,
      lastTick: Option[Instant],
      nextTick: Instant,
      now: Instant
  )

  /** A row as [[weir.postgres.Overview.schedules]] reads it. */
  final case class Row(
      name: String,
      queue: String,
      cron: Option[String],
      zone: Option[String],
      everyMs: Option[Long],
      maxMissed: Int,
      missed: String,
      lastTick: Option[Instant],
      nextTick: Instant,
      ticks: Long
  )

  /** `(cron, zone, every_ms)` of a timing. */
  def columns(timing: Schedule.Timing): (Option[String], Option[String], Option[Long]) = timing match
    case c: Schedule.Timing.Cron => (Some(c.expression), Some(c.zone.getId), None)
    case Schedule.Timing.Every(ms) => (None, None, Some(ms))
    // never declared: Scheduler.resource refuses a schedule with errors before it writes a row
    case Schedule.Timing.Invalid(errors) => throw new weir.InvalidSettings("Schedule", errors)
