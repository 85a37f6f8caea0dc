package weir.postgres

import cats.effect.IO
import doobie.*
import doobie.implicits.*

/** Reads weir's tables directly, outside the library, for assertions. */
object Rows:

  /**
   * A live task's state as the read models call it, and the parents it still waits for (0 for a dependent
   * a claim may take from `waiting`, its parent completed): two columns for a query of `tasks AS t`.
   */
  def liveState(db: Database[IO]): String =
    s"${weir.postgres.internal.TaskStateSql.live(db.schema)}, " +
      s"CASE WHEN t.waits_on IS NOT NULL AND ${weir.postgres.internal.TaskStateSql.ready(db.schema, "t")} " +
      "THEN 0 ELSE t.parents_left END"

  def count(db: Database[IO], table: String, where: String = "true"): IO[Long] =
    Fragment.const(
      s"SELECT count(*) FROM ${db.schema(table)} WHERE $where"
    ).query[Long].unique.transact(TestDatabase.admin)

  /** `(payload as text, state, attempt, errors as text)` of every finished task. */
  def finished(db: Database[IO]): IO[Vector[(String, String, Int, String)]] =
    Fragment
      .const(
        s"SELECT payload::text, state::text, attempt, errors::text FROM ${db.schema("finished")} ORDER BY id"
      )
      .query[(String, String, Int, String)]
      .to[Vector]
      .transact(TestDatabase.admin)

  /** `(id, state, attempt, lease_owner, errors as text)` of every unfinished task. */
  def tasks(db: Database[IO]): IO[Vector[(Long, String, Int, Option[Long], String)]] =
    Fragment
      .const(
        s"SELECT id, state::text, attempt, lease_owner, errors::text FROM ${db.schema("tasks")} ORDER BY id"
      )
      .query[(Long, String, Int, Option[Long], String)]
      .to[Vector]
      .transact(TestDatabase.admin)

  /** The rows of any SELECT, as `A`. */
  def query[A: Read](sql: String): IO[Vector[A]] =
    Fragment.const(sql).query[A].to[Vector].transact(TestDatabase.admin)

  def exec(sql: String): IO[Int] = Fragment.const(sql).update.run.transact(TestDatabase.admin)

  /** `SELECT * FROM <call>` of the schema's enqueue function: `(task_id, inserted)`. */
  def enqueueSql(call: String): IO[(Long, Boolean)] =
    Fragment.const(s"SELECT * FROM $call").query[(Long, Boolean)].unique.transact(TestDatabase.admin)

  /** Runs a SELECT for its effect (for example `pg_terminate_backend`); returns the rows it gave. */
  def select(sql: String): IO[Int] =
    Fragment.const(sql).query[Boolean].to[List].map(_.size).transact(TestDatabase.admin)
