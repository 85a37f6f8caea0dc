package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.Schema

/** The enqueue statements (see [[Sql]]): one task, a batch without unique keys, a batch with them. */
private[postgres] final class EnqueueSql(schema: Schema) extends SqlBase(schema):
  import Sql.*

  /** One task through the schema's SQL function: `(id, inserted)`. */
  def enqueueOne(queue: String, t: EncodedTask): ConnectionIO[(Long, Boolean)] =
    (const(s"SELECT task_id, inserted FROM ${schema("enqueue")}(") ++
      fr0"$queue, ${t.payload}::jsonb, ${t.priority}, now() + ${t.delayMillis} * interval '1 millisecond', " ++
      fr0"${t.maxAttempts}, ${t.orderingKey}, ${t.uniqueKey}, ${t.headers}::jsonb)").query[(
        Long,
        Boolean
    )].unique

  /**
   * A batch without unique keys in one statement: the rows are inserted in input order, each drawing its id
   * from the identity sequence as it is inserted, so the returned ids, sorted, are the inputs' ids in order.
   */
  def enqueuePlain(queue: String, batch: Vector[EncodedTask]): ConnectionIO[Vector[Long]] =
    val payloads = batch.map(_.payload).toArray
    val priorities = batch.map(_.priority).toArray
    val delays = batch.map(_.delayMillis).toArray
    val maxAttempts = batch.map(_.maxAttempts).toArray
    val orderingKeys = batch.map(_.orderingKey).toArray
    val firsts = firstOfKey(batch)
    val headers = batch.map(_.headers).toArray
    (const(
      s"INSERT INTO $tasks (queue, payload, priority, run_at, max_attempts, ordering_key, head, headers) SELECT "
    ) ++
      fr0"$queue" ++
      const(""", payload::jsonb, priority::smallint, now() + delay_ms * interval '1 millisecond',
             max_attempts, ordering_key, """) ++ headAtInsert(queue) ++ const(""", headers::jsonb
      FROM unnest(""") ++
      fr0"$payloads::text[], $priorities::int[], $delays::bigint[], $maxAttempts::int[], $orderingKeys::text[], $firsts::int[], $headers::text[]" ++
      const(
        ") AS i(payload, priority, delay_ms, max_attempts, ordering_key, first_of_key, headers) RETURNING id"
      ))
      .query[Long]
      .to[Vector]
      .map(_.sorted)

  /**
   * A batch in one statement. Ids are drawn in input order before the insert, so each input row is
   * matched to its id; rows whose unique key is held return the holder's id when this statement's
   * snapshot shows it, or nothing (the caller enqueues them again: the holder committed after the
   * snapshot, or is another row of this batch).
   */
  def enqueueMany(queue: String, batch: Vector[EncodedTask]): ConnectionIO[Vector[(Int, Long, Boolean)]] =
    val payloads = batch.map(_.payload).toArray
    val priorities = batch.map(_.priority).toArray
    val delays = batch.map(_.delayMillis).toArray
    val maxAttempts = batch.map(_.maxAttempts).toArray
    val orderingKeys = batch.map(_.orderingKey).toArray
    val uniqueKeys = batch.map(_.uniqueKey).toArray
    val firsts = firstOfKey(batch)
    val headers = batch.map(_.headers).toArray
    (const(s"""WITH input AS (
      SELECT i.*, nextval('${tasks}_id_seq') AS id
      FROM unnest(""") ++
      fr0"$payloads::text[], $priorities::int[], $delays::bigint[], $maxAttempts::int[], $orderingKeys::text[], $uniqueKeys::text[], $firsts::int[], $headers::text[]" ++
      const(s""") WITH ORDINALITY AS i(payload, priority, delay_ms, max_attempts, ordering_key, unique_key, first_of_key, headers, n)
      ORDER BY i.n
    ), ins AS (
      INSERT INTO $tasks AS t (id, queue, payload, priority, run_at, max_attempts, ordering_key, unique_key, head, headers)
      SELECT id, """) ++ fr0"$queue" ++ const(s""", payload::jsonb, priority::smallint,
             now() + delay_ms * interval '1 millisecond', max_attempts, ordering_key, unique_key, """) ++
      headAtInsert(queue) ++ const(s""", headers::jsonb
      FROM input AS i ORDER BY n
      ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
      RETURNING t.id
    )
    SELECT input.n::int, coalesce(ins.id, held.id), ins.id IS NOT NULL
    FROM input
    LEFT JOIN ins ON ins.id = input.id
    LEFT JOIN $tasks AS held ON ins.id IS NULL AND held.queue = """) ++ fr0"$queue" ++ const(
        s""" AND held.unique_key = input.unique_key
    WHERE ins.id IS NOT NULL OR held.id IS NOT NULL"""
      )).query[(Int, Long, Boolean)].to[Vector]

  /**
   * Which tasks of a batch may be their key's head (see [[headAtInsert]]): those with no earlier task of
   * their ordering key in the batch. An earlier task with a unique key does not count, as it may be
   * refused; marking the next one too only costs the claim a probe.
   */
  private def firstOfKey(batch: Vector[EncodedTask]): Array[Int] =
    val sure = scala.collection.mutable.HashSet.empty[String]
    batch.map { t =>
      val first = t.orderingKey.forall { key =>
        val first = !sure.contains(key)
        if t.uniqueKey.isEmpty then sure += key
        first
      }
      if first then 1 else 0 // doobie sends a Boolean array as bit[], which does not cast to boolean[]
    }.toArray

  /**
   * The `head` of a row being inserted from an input `i` with columns `ordering_key` and `first_of_key` (1 or 0): a
   * keyed task is its key's head unless an earlier task of its batch or of the table has the key. A task
   * whose key's last task is being removed by a transaction this insert cannot see yet is left unmarked;
   * [[repairHeads]] finds it.
   */
  private def headAtInsert(queue: String): Fragment =
    const(s"""(i.ordering_key IS NULL OR (i.first_of_key = 1 AND NOT EXISTS (
      SELECT 1 FROM $tasks AS e WHERE e.queue = """) ++ fr0"$queue" ++
      const(" AND e.ordering_key = i.ordering_key)))")
