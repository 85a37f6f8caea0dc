package weir.console

import cats.effect.IO
import doobie.*
import doobie.implicits.*
import weir.postgres.Database

/**
 * The rows every console test starts from, planted with SQL as weir's workers would leave them:
 *   - queue `emails`: three available tasks, the first two of key `user-1` (the first with a W3C trace
 *     header), and one dead task whose payload holds a password and whose errors hold two attempts;
 *   - queue `reports`: one completed task and one scheduled an hour from now.
 */
final case class Planted(available: Vector[Long], dead: Long, completed: Long, scheduled: Long):
  def all: Vector[Long] = available ++ Vector(dead, completed, scheduled)

object Planted:
  val traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
  val password = "hunter2-secret"
  val deadError = "java.lang.IllegalStateException: smtp.example.org refused the connection"

  def plant(db: Database[IO]): IO[Planted] =
    val tasks = db.schema("tasks")
    val finished = db.schema("finished")
    def insert(queue: String, payload: String, key: Option[String], headers: Option[String], runIn: String) =
      (Fragment.const(
        s"INSERT INTO $tasks (queue, payload, ordering_key, headers, run_at, head, created_at) VALUES ("
      ) ++
        fr0"$queue, $payload::jsonb, $key, $headers::jsonb, now() + $runIn::interval, " ++
        fr0"$key IS NULL OR NOT EXISTS (SELECT 1 FROM " ++ Fragment.const0(tasks) ++
        fr0" WHERE ordering_key = $key), clock_timestamp()) RETURNING id").query[Long].unique
    def done(queue: String, state: String, payload: String, errors: String) =
      (Fragment.const(
        s"INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, errors, created_at) "
      ) ++
        fr0"SELECT nextval(pg_get_serial_sequence(" ++ Fragment.const0(s"'$tasks'") ++
        fr0", 'id')), $queue, $payload::jsonb, 0, " ++
        Fragment.const0(
          s"'$state'"
        ) ++ fr0", 2, 2, $errors::jsonb, clock_timestamp() RETURNING id").query[Long].unique
    val errors =
      s"""[{"attempt": 1, "at": "2026-01-01T10:00:00Z", "error": "java.io.IOException: timeout"},
         |{"attempt": 2, "at": "2026-01-01T10:01:00Z", "error": "$deadError\\n\\tat Mailer.send(Mailer.scala:42)"}]""".stripMargin
    val io =
      for
        a1 <- insert(
          "emails",
          """{"to": "ada@example.org", "n": 1}""",
          Some("user-1"),
          Some(s"""{"traceparent": "00-$traceId-00f067aa0ba902b7-01"}"""),
          "0 s"
        )
        a2 <- insert("emails", """{"to": "ada@example.org", "n": 2}""", Some("user-1"), None, "0 s")
        a3 <- insert("emails", """{"to": "bob@example.org", "n": 3}""", None, None, "0 s")
        dead <- done("emails", "dead", s"""{"to": "eve@example.org", "password": "$password"}""", errors)
        completed <- done("reports", "completed", """{"report": "daily"}""", "[]")
        scheduled <- insert("reports", """{"report": "weekly"}""", None, None, "1 hour")
      yield Planted(Vector(a1, a2, a3), dead, completed, scheduled)
    io.transact(db.transactor)

  /** Where the task `id` is now: `tasks` (live) or `finished`, with its state; `None` if gone. */
  def where(db: Database[IO], id: Long): IO[Option[String]] =
    (Fragment.const(s"SELECT state::text FROM ${db.schema("tasks")} WHERE id = ") ++ fr0"$id" ++
      Fragment.const(s" UNION ALL SELECT state::text FROM ${db.schema("finished")} WHERE id = ") ++ fr0"$id")
      .query[String].option.transact(db.transactor)

  /** Every task's id and state, to compare before and after a refused action. */
  def snapshot(db: Database[IO]): IO[Vector[(Long, String, Int)]] =
    Fragment.const(s"""SELECT id, state::text, attempt FROM ${db.schema("tasks")}
      UNION ALL SELECT id, state::text, attempt FROM ${db.schema("finished")} ORDER BY 1""")
      .query[(Long, String, Int)].to[Vector].transact(db.transactor)
