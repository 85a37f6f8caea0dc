package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.{Parent, Schema}
import weir.postgres.internal.TaskStateSql.given

/**
 * The statements of task dependencies (see [[Sql]] for the conventions): a graph's enqueue, in the order
 * [[GraphEnqueue]] runs them, and a job's reading of its parents. What a parent's end does to its
 * dependents is the schema's `parents_ended` (migration 12), which the trigger on `tasks` runs.
 */
private[postgres] final class GraphSql(schema: Schema) extends SqlBase(schema):
  import GraphSql.*

  /**
   * Locks the live tasks among `ids`, so that none ends before the caller commits, and marks those not
   * marked yet as having dependents (their end then runs the trigger); returns their ids, each with the
   * workflow a dependent of it joins (its own, or its id when it is in none: migration 14). A task that
   * ended meanwhile is not among them: its row was gone once the lock could be taken. When every one is
   * marked already, the mark reads no row (see [[SqlBase.nextHeads]]).
   */
  def holdParents(ids: Array[Long]): ConnectionIO[Vector[(Long, Long)]] =
    (const(
      s"WITH held AS (SELECT t.id, t.dependents, coalesce(t.workflow, t.id) AS workflow FROM $tasks AS t WHERE t.id = ANY("
    ) ++ fr0"$ids" ++
      const(s""") FOR KEY SHARE)
    , marked AS (
      UPDATE $tasks AS t SET dependents = true
      WHERE EXISTS (SELECT 1 FROM held AS u WHERE NOT u.dependents)
        AND t.id = ANY(ARRAY(SELECT h.id FROM held AS h WHERE NOT h.dependents)) RETURNING 1)
    SELECT h.id, h.workflow FROM held AS h""")).query[(Long, Long)].to[Vector]

  /**
   * The tasks among `ids` that have ended and kept their row in `finished`, each with the workflow a
   * dependent of it joins, as [[holdParents]] says. Run after [[holdParents]], as a statement of its own: its
   * snapshot sees the ends that the lock waited for.
   */
  def endedAmong(ids: Array[Long]): ConnectionIO[Vector[(Long, Long)]] =
    (const(s"SELECT f.id, coalesce(f.workflow, f.id) FROM $finished AS f WHERE f.id = ANY(") ++ fr0"$ids" ++
      const(")"))
      .query[(Long, Long)]
      .to[Vector]

  /**
   * Marks the live tasks among `ids` as waited on by a dependent through `waits_on` (migration 19: their end
   * then looks for such dependents); run after [[holdParents]] locked them. Returns how many it marked.
   */
  def markWaitedOn(ids: Array[Long]): ConnectionIO[Int] =
    (const(s"UPDATE $tasks AS t SET waited_on = true WHERE t.id = ANY(") ++ fr0"$ids" ++
      const(") AND NOT t.waited_on")).update.run

  /** `n` new task ids, ascending. */
  def drawIds(n: Int): ConnectionIO[Vector[Long]] =
    (const(s"SELECT nextval('${tasks}_id_seq') FROM generate_series(1, ") ++ fr0"$n" ++ const(")"))
      .query[Long]
      .to[Vector]
      .map(_.sorted)

  /**
   * Inserts `rows`, each with its id, queue and parents: `waiting` if it has parents left, `available`
   * otherwise. A keyed row is its key's head unless an earlier row of the batch (`firstOfKey`) or a task of
   * the table with a smaller id has its key: ids are drawn beforehand, and a graph's rows may go in out of
   * their ids' order. Returns `(n, id, inserted)` per input row (numbered from 1), as [[EnqueueSql.enqueueMany]]
   * does: a row whose unique key is held returns the holder when this statement's snapshot shows it, and
   * nothing otherwise (the caller inserts it again). With a `batch`, every inserted row is a member of it
   * (migration 13). Each row's `workflow` is its workflow's id (migration 14), or none; `waited_on`, whether
   * a dependent names it in `waits_on` (migration 19).
   */
  def insert(rows: Vector[Row], batch: Option[Long] = None): ConnectionIO[Vector[(Int, Long, Boolean)]] =
    val ids = rows.map(_.id).toArray
    val queueNames = rows.map(_.queue).toArray
    val payloads = rows.map(_.task.payload).toArray
    val priorities = rows.map(_.task.priority).toArray
    val delays = rows.map(_.task.delayMillis).toArray
    val maxAttempts = rows.map(_.task.maxAttempts).toArray
    val orderingKeys = rows.map(_.task.orderingKey).toArray
    val uniqueKeys = rows.map(_.task.uniqueKey).toArray
    val firsts = rows.map(r => if r.firstOfKey then 1 else 0).toArray
    val headers = rows.map(_.task.headers).toArray
    val afters = rows.map(r => Option.when(r.after.nonEmpty)(r.after.mkString("{", ",", "}"))).toArray
    val lefts = rows.map(_.parentsLeft).toArray
    // doobie sends a Boolean array as bit[], which does not cast to boolean[]
    val dependents = rows.map(r => if r.dependents then 1 else 0).toArray
    val workflows = rows.map(_.workflow).toArray
    val waitsOn = rows.map(_.waitsOn).toArray
    val waitedOn = rows.map(r => if r.waitedOn then 1 else 0).toArray
    (const("WITH input AS (SELECT i.* FROM unnest(") ++
      fr0"$ids::bigint[], $queueNames::text[], $payloads::text[], $priorities::int[], $delays::bigint[], " ++
      fr0"$maxAttempts::int[], $orderingKeys::text[], $uniqueKeys::text[], $firsts::int[], $headers::text[], " ++
      fr0"$afters::text[], $lefts::int[], $dependents::int[], $workflows::bigint[], $waitsOn::bigint[], " ++
      fr0"$waitedOn::int[]" ++
      const(s""") WITH ORDINALITY AS i(id, queue, payload, priority, delay_ms, max_attempts, ordering_key,
        unique_key, first_of_key, headers, after, parents_left, dependents, workflow, waits_on, waited_on, n))
    , ins AS (
      INSERT INTO $tasks AS t (id, queue, payload, priority, run_at, max_attempts, ordering_key, unique_key, head,
                               headers, after, parents_left, dependents, workflow, waits_on, waited_on,
                               state""") ++
      batch.fold(Fragment.empty)(_ => const(", batch")) ++ const(
        s""")
      SELECT i.id, i.queue, i.payload::jsonb, i.priority::smallint, now() + i.delay_ms * interval '1 millisecond',
             i.max_attempts, i.ordering_key, i.unique_key,
             i.ordering_key IS NULL OR (i.first_of_key = 1 AND NOT EXISTS (
               SELECT 1 FROM $tasks AS e
               WHERE e.queue = i.queue AND e.ordering_key = i.ordering_key AND e.id < i.id)),
             i.headers::jsonb, i.after::bigint[], i.parents_left, i.dependents = 1, i.workflow, i.waits_on,
             i.waited_on = 1,
             (CASE WHEN i.parents_left > 0 THEN 'waiting' ELSE 'available' END)::${schema("task_state")}"""
      ) ++
      batch.fold(Fragment.empty)(b => fr0", $b::bigint") ++ const(s"""
      FROM input AS i ORDER BY i.n
      ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
      RETURNING t.id)
    SELECT input.n::int, coalesce(ins.id, held.id), ins.id IS NOT NULL
    FROM input
    LEFT JOIN ins ON ins.id = input.id
    LEFT JOIN $tasks AS held
      ON ins.id IS NULL AND held.queue = input.queue AND held.unique_key = input.unique_key
    WHERE ins.id IS NOT NULL OR held.id IS NOT NULL""")).query[(Int, Long, Boolean)].to[Vector]

  /**
   * The edges of inserted tasks: `children(i)` waits for `parents(i)`, whatever its end if `anyOutcome(i)`;
   * `childQueues(i)`, the child's queue when a claim takes it from `waiting` once that parent completed (such
   * a child has an edge only when it runs on any outcome: migration 19).
   */
  def insertEdges(
      parents: Array[Long],
      children: Array[Long],
      anyOutcome: Array[Int],
      childQueues: Array[Option[String]]
  ): ConnectionIO[Int] =
    (const(
      s"INSERT INTO ${schema("dependencies")} (parent, child, any_outcome, child_queue) SELECT e.p, e.c, e.a = 1, e.q FROM unnest("
    ) ++
      fr0"$parents::bigint[], $children::bigint[], $anyOutcome::int[], $childQueues::text[]" ++
      const(") AS e(p, c, a, q)")).update.run

  /**
   * Settles the edges of `ids`, tasks that have already ended (a row in `finished` says how; none, that
   * they completed), as their end would have: see the schema's `parents_ended`.
   */
  def parentsEnded(ids: Array[Long]): ConnectionIO[Int] =
    (const(s"SELECT count(*)::int FROM (SELECT ${schema("parents_ended")}(") ++ fr0"$ids" ++
      const("::bigint[])) AS s")).query[Int].unique

  /** Wakes the workers of `queueNames` at commit, one notification each. */
  def wakeQueues(queueNames: Array[String]): ConnectionIO[Int] =
    (const(s"SELECT count(pg_notify('${schema.channel}', q))::int FROM unnest(") ++
      fr0"$queueNames::text[]" ++
      const(") AS q")).query[Int].unique

  /**
   * The parents of the live task `id`, in the order its enqueue named them, each as it stands now: its
   * state, finished or not, and its result; `None` for the state of a parent whose row is gone. Empty for
   * a task without parents, or one no longer in `tasks`.
   */
  def parentsOf(id: Long): ConnectionIO[Vector[Parent]] =
    (const(s"""SELECT a.id, coalesce(f.state::text, ${TaskStateSql.live(schema)}), f.result::text
      FROM unnest((SELECT c.after FROM $tasks AS c WHERE c.id = """) ++ fr0"$id" ++
      const(s""")) WITH ORDINALITY AS a(id, n)
      LEFT JOIN $finished AS f ON f.id = a.id
      LEFT JOIN $tasks AS t ON t.id = a.id AND f.id IS NULL
      ORDER BY a.n""")).query[Parent].to[Vector]

private[postgres] object GraphSql:

  /**
   * A task to insert: its id (drawn beforehand), queue and task; whether it may be its key's head (see
   * [[EnqueueSql]]); its parents' ids, how many of them have not ended (all of them, at insert: the ended
   * ones are settled after the edges exist), whether a task of the same graph waits for it, and the
   * workflow it is in, if any; `waitsOn`, its one parent when a claim takes it from `waiting` once that
   * parent completed (migration 18); `waitedOn`, whether a task names it so (migration 19).
   */
  final case class Row(
      id: Long,
      queue: String,
      task: Sql.EncodedTask,
      firstOfKey: Boolean,
      after: Vector[Long],
      parentsLeft: Int,
      dependents: Boolean,
      workflow: Option[Long],
      waitsOn: Option[Long] = None,
      waitedOn: Boolean = false
  )
