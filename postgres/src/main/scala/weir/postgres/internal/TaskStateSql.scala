package weir.postgres.internal

import doobie.Get
import weir.postgres.{Schema, TaskState}

/**
 * How the read model's statements read a task's [[TaskState]], one way for every read: a finished task's
 * stored state as it is, a live one's through [[live]], and the text back into a `TaskState` by its name.
 */
private[postgres] object TaskStateSql:
  import TaskState.*

  /**
   * The state of the live task `t` (a row of `tasks` under that alias) of `schema`, as [[TaskState]] names
   * it: an available task behind an earlier task of its key is waiting (by its `head` mark, the hint the
   * claim reads), and one due later is scheduled; a waiting task whose one parent completed is available,
   * or scheduled if due later (a claim takes it from `waiting`: its parent's row in `ready_parents`).
   */
  def live(schema: Schema): String =
    s"""CASE WHEN t.state = '${Available.name}' AND t.ordering_key IS NOT NULL AND NOT t.head THEN '${Waiting.name}'
      WHEN t.state = '${Available.name}' AND t.run_at > now() THEN '${Scheduled.name}'
      WHEN t.state = '${Waiting.name}' AND ${ready(schema, "t")}
        THEN CASE WHEN t.run_at > now() THEN '${Scheduled.name}' ELSE '${Available.name}' END
      ELSE t.state::text END"""

  /**
   * Whether the task `alias` waits on one parent (its `waits_on`) that has completed, so that a claim may take
   * it from `waiting` (migration 18). Tested on its own column first: most tasks wait on none.
   */
  def ready(schema: Schema, alias: String): String =
    s"($alias.waits_on IS NOT NULL AND EXISTS (SELECT 1 FROM ${schema("ready_parents")} AS rp " +
      s"WHERE rp.queue = $alias.queue AND rp.parent = $alias.waits_on))"

  /** The state of the finished task `t` (a row of `finished` under that alias): as it is stored. */
  val finished: String = "t.state::text"

  /** A state's name read back; a name outside the vocabulary fails the read, naming it. */
  given Get[TaskState] = Get[String].temap(s => TaskState.parse(s).toRight(s"unknown task state: '$s'"))
