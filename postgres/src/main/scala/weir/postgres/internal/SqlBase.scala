package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import cats.syntax.functor.*
import weir.postgres.Schema

/**
 * What the statements of weir-postgres share, for one schema: the tables' names, and the fragments that
 * several statements include (the next heads of keys whose tasks leave `tasks`, the wake-up of a queue,
 * the record of a cancel).
 */
private[postgres] abstract class SqlBase(val schema: Schema):

  protected val tasks: String = schema("tasks")
  protected val finished: String = schema("finished")
  protected val workers: String = schema("workers")
  protected val queues: String = schema("queues")

  protected def const(s: String): Fragment = Fragment.const0(s)

  /**
   * A recursive common table expression `name(first, second)` (for a `WITH RECURSIVE`): the distinct
   * (`first`, `second`) pairs of the tasks `w` for which `where` holds, in order, each found by one probe of
   * an index on those two columns for the next pair after the last (a skip scan: as many probes as pairs,
   * however many tasks share a pair).
   */
  protected def skipScan(name: String, first: String, second: String, where: String): String =
    s"""$name($first, $second) AS (
      (SELECT w.$first, w.$second FROM $tasks AS w WHERE $where
       ORDER BY w.$first, w.$second LIMIT 1)
      UNION ALL
      SELECT nx.$first, nx.$second FROM $name AS k CROSS JOIN LATERAL (
        SELECT w.$first, w.$second FROM $tasks AS w
        WHERE $where AND (w.$first, w.$second) > (k.$first, k.$second)
        ORDER BY w.$first, w.$second LIMIT 1) AS nx
    )"""

  /**
   * A common table expression (to follow others in a `WITH`) that marks as head the next task of every
   * ordering key whose task the expression `removed` (with columns `id`, `queue`, `ordering_key`) removes
   * from `tasks`. Every statement that removes tasks includes it; it runs whether or not it is referenced.
   * Its first condition, which reads no row of `tasks`, is tested once, before the update reads any: when no
   * removed task has a key, nothing is read (the planner, on statistics taken while the table was small,
   * would read the whole table for the empty list of ids otherwise).
   */
  def nextHeads(removed: String): Fragment =
    const(s"""
    , next_heads AS (
      UPDATE $tasks AS n SET head = true
      WHERE EXISTS (SELECT 1 FROM $removed AS k WHERE k.ordering_key IS NOT NULL)
        AND NOT n.head AND n.id = ANY(ARRAY(
        SELECT (SELECT e.id FROM $tasks AS e
                WHERE e.queue = r.queue AND e.ordering_key = r.ordering_key
                  AND NOT EXISTS (SELECT 1 FROM $removed AS x WHERE x.id = e.id)
                ORDER BY e.id LIMIT 1)
        FROM $removed AS r WHERE r.ordering_key IS NOT NULL)))""")

  /** Wakes the workers of `queue` at commit, as an insert does. */
  def wakeQueue(queue: String): ConnectionIO[Unit] =
    (const(s"SELECT count(*)::int FROM (SELECT pg_notify('${schema.channel}', ") ++ fr0"$queue)) AS n")
      .query[Int]
      .unique
      .void

  /** The `finished_state` of a task leaving `tasks` through failure: cancelled if `cancel` is set, or dead. */
  protected def finishedState(cancel: String): String =
    s"(CASE WHEN $cancel IS NULL THEN 'dead' ELSE 'cancelled' END)::${schema("finished_state")}"

  /**
   * The errors' entry of a cancel whose reason is the column `cancel` (an empty array when it is null), for
   * attempt `attempt`.
   */
  protected def cancelEntry(attempt: String, cancel: String): String =
    s"(CASE WHEN $cancel IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object('attempt', $attempt, 'at', now(), 'error', 'cancelled: ' || $cancel)) END)"
