package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import weir.postgres.{AuditAction, Operator, QueueRate, Schema}

/** The statements of [[weir.postgres.QueueControls]], for one schema. */
private[postgres] final class ControlSql(schema: Schema) extends SqlBase(schema):
  import ControlSql.*

  private val audit = schema("audit")
  private val sql = new Sql(schema)

  /** Gives `queue` a row of controls (none set) unless it has one. */
  def addQueue(queue: String): ConnectionIO[Int] = sql.addQueue(queue)

  /**
   * `change` on `queue`'s row, if `queue` is known, with its audit entry (`action`, `detail`, `by`) and its
   * workers woken at commit (a changed control may let them claim): one statement, so one transaction.
   * False, changing and recording nothing, if `queue` is unknown.
   */
  def control(queue: String, change: Change, action: AuditAction, detail: Option[String], by: Operator)
      : ConnectionIO[Boolean] =
    (const(s"WITH known AS (SELECT ") ++ known(queue) ++ const(""" AS yes)
    , changed AS (""") ++ set(queue, change, const(" WHERE (SELECT yes FROM known)")) ++
      const(" RETURNING q.name)") ++
      const(s"""
    , recorded AS (
      INSERT INTO $audit (operator, session, action, queue, outcome, detail)
      SELECT """) ++ fr0"${by.name}, ${by.session}, ${action.name}, $queue, 'done', $detail" ++
      const(
        s"""
      WHERE (SELECT yes FROM known))
    SELECT k.yes, (SELECT count(pg_notify('${schema.channel}', c.name)) FROM changed AS c) FROM known AS k"""
      ))
      .query[(Boolean, Long)].unique.map(_._1)

  /**
   * Writes `change` in `queue`'s row, creating it if needed, `when` (a `WHERE` clause, or empty): a statement
   * of its own, or a part of [[control]]. A new rate starts with a full burst; a changed one keeps the
   * tokens the old one had gathered by now, up to the new burst, so that changing a rate never hands out a
   * fresh burst.
   */
  def set(queue: String, change: Change, when: Fragment = Fragment.empty): Fragment =
    val parts = Vector(
      change.paused.map(p => (Vector("paused"), fr0"$p", Vector("paused = EXCLUDED.paused"))),
      change.maxRunning.map(m =>
        (Vector("max_running"), fr0"$m", Vector("max_running = EXCLUDED.max_running"))
      ),
      change.rate.map { rate =>
        val perSecond = rate.map(_.perSecond)
        val burst = rate.map(_.burst)
        (
          Vector("rate_per_second", "rate_burst", "tokens", "tokens_at"),
          fr0"$perSecond, $burst, coalesce($burst, 0), clock_timestamp()",
          Vector(
            "rate_per_second = EXCLUDED.rate_per_second",
            "rate_burst = EXCLUDED.rate_burst",
            """tokens = CASE WHEN q.rate_per_second IS NULL OR EXCLUDED.rate_per_second IS NULL THEN EXCLUDED.tokens
                      ELSE least(EXCLUDED.rate_burst::double precision, q.tokens + q.rate_per_second *
                             greatest(0, extract(epoch FROM clock_timestamp() - q.tokens_at))) END""",
            "tokens_at = clock_timestamp()"
          )
        )
      }
    ).flatten
    val columns = ("name" +: parts.flatMap(_._1)).mkString(", ")
    val values = parts.map(_._2).foldLeft(fr0"$queue")(_ ++ const(", ") ++ _)
    val sets = (parts.flatMap(_._3) :+ "updated_at = now()").mkString(", ")
    const(s"INSERT INTO $queues AS q ($columns) SELECT ") ++ values ++ when ++
      const(s" ON CONFLICT (name) DO UPDATE SET $sets")

  /**
   * Whether `queue` is known: it has a row of controls, or tasks, finished ones included. A `CASE` so that
   * the row, the usual answer, spares the scans of the tasks; the finished states are named so that the
   * search is an index probe per state.
   */
  private def known(queue: String): Fragment =
    const(s"CASE WHEN EXISTS (SELECT 1 FROM $queues WHERE name = ") ++ fr0"$queue" ++
      const(s") THEN true ELSE EXISTS (SELECT 1 FROM $tasks WHERE queue = ") ++ fr0"$queue" ++
      const(
        s") OR EXISTS (SELECT 1 FROM $finished WHERE state IN ('completed', 'dead', 'cancelled') AND queue = "
      ) ++ fr0"$queue" ++ const(") END")

object ControlSql:

  /** What a control changes in a queue's row: its pause, its limit on running tasks, its rate; `None` keeps it. */
  final case class Change(
      paused: Option[Boolean] = None,
      maxRunning: Option[Option[Int]] = None,
      rate: Option[Option[QueueRate]] = None
  )
