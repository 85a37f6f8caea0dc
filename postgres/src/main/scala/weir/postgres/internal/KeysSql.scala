package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.{CappedCount, KeyBacklog, Schema, TaskState}
import weir.postgres.internal.TaskStateSql.given

import java.time.Instant

/** The statement behind [[weir.postgres.TaskBrowser.keys]], for one schema: the keys with tasks waiting. */
private[postgres] final class KeysSql(schema: Schema) extends SqlBase(schema):

  /**
   * Keys with tasks waiting, at most `limit`: each one's backlog (counted up to `cap + 1`) and head, the
   * task that runs next. Blocked keys come first, then the longest waiting heads. Heads are found by their
   * `head` mark, which may for a moment be on a task behind the real head too (the marks err on that side):
   * such a task is left out by checking that no earlier task of its key is left.
   */
  def keys(limit: Int, cap: Int): ConnectionIO[Vector[KeyBacklog]] =
    (const(s"""WITH h AS (
        SELECT t.id, t.queue, t.ordering_key, t.attempt, t.created_at, ${TaskStateSql.live(schema)} AS state,
               jsonb_array_length(t.errors) > 0 AS failed
        FROM $tasks AS t WHERE t.ordering_key IS NOT NULL AND t.head
        ORDER BY failed DESC, t.created_at, t.id LIMIT """) ++ fr0"${limit * 2}" ++ const(s"""
      ), k AS (
        SELECT h.*, (SELECT count(*) FROM (SELECT 1 FROM $tasks AS b
                     WHERE b.queue = h.queue AND b.ordering_key = h.ordering_key LIMIT """) ++
      fr0"${cap + 1}" ++
      const(s""") AS c) AS backlog
        FROM h WHERE NOT EXISTS (
          SELECT 1 FROM $tasks AS e WHERE e.queue = h.queue AND e.ordering_key = h.ordering_key AND e.id < h.id)
        ORDER BY failed DESC, created_at, id LIMIT """) ++ fr0"$limit" ++ const(s"""
      )
      SELECT queue, ordering_key, backlog, id, state, attempt, created_at, failed AND backlog > 1 AS blocked
      FROM k ORDER BY blocked DESC, created_at, id"""))
      .query[(String, String, Long, Long, TaskState, Int, Instant, Boolean)]
      .map((queue, key, backlog, head, state, attempt, createdAt, blocked) =>
        KeyBacklog(queue, key, CappedCount.of(backlog, cap), head, state, attempt, createdAt, blocked)
      )
      .to[Vector]
