package weir.lab.console

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.lab.durable.LabDatabase
import weir.postgres.{Database, NewTask, TaskQueue}

import scala.concurrent.duration.*

/**
 * The tables the console lab measures on: a history of `finished` tasks written by SQL in a few large
 * statements (a worker would take minutes to finish a million), and a backlog of live tasks enqueued
 * through [[TaskQueue]], so that their keys' head marks are the ones workers keep. Both have the shapes
 * the console's filters meet in production: four queues, half the tasks keyed over a thousand keys, three
 * priorities, a few dead tasks with their errors, a few cancelled, a tenth of the backlog scheduled later,
 * and a few keys blocked behind a head that failed.
 */
object ConsoleSeed:

  val queues: Vector[String] = Vector("emails", "invoices", "reports", "webhooks")
  val keys: Int = 1000

  /** Rows per statement: large enough to be quick, small enough to keep a statement's memory modest. */
  private val chunk = 100000

  /** Writes `n` finished tasks, enqueued over the last 7 days, every 50th dead and every 97th cancelled. */
  def history(lab: LabDatabase, n: Long): IO[Unit] =
    val finished = lab.schema("finished")
    val spanMillis = 7L * 24 * 3600 * 1000
    (0L until n by chunk.toLong).toVector.traverse_ { from =>
      val to = (from + chunk).min(n)
      Fragment.const(s"""INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts,
          ordering_key, errors, created_at, finished_at, worker)
        SELECT i, (ARRAY[${queues.map(q => s"'$q'").mkString(", ")}])[1 + i % ${queues.size}],
          jsonb_build_object('n', i, 'customer', 'c' || (i % 5000), 'note', md5(i::text)),
          (i % 3)::smallint,
          (CASE WHEN i % 50 = 0 THEN 'dead' WHEN i % 97 = 0 THEN 'cancelled' ELSE 'completed' END)::${lab.schema(
          "finished_state"
        )},
          CASE WHEN i % 50 = 0 THEN 3 ELSE 1 END, 3,
          CASE WHEN i % 2 = 0 THEN 'k' || (i % $keys) END,
          CASE WHEN i % 50 = 0 THEN jsonb_build_array(
            jsonb_build_object('attempt', 1, 'at', now(), 'worker', 1 + i % 4, 'error', 'java.io.IOException: timeout'),
            jsonb_build_object('attempt', 2, 'at', now(), 'worker', 1 + i % 4, 'error', 'java.io.IOException: timeout'),
            jsonb_build_object('attempt', 3, 'at', now(), 'worker', 1 + i % 4,
              'error', E'java.lang.IllegalStateException: refused\\n\\tat Mailer.send(Mailer.scala:42)'))
          ELSE '[]'::jsonb END,
          now() - interval '7 days' + (i * $spanMillis / $n) * interval '1 millisecond',
          now() - interval '7 days' + (i * $spanMillis / $n + 20 + i % 1000) * interval '1 millisecond',
          1 + i % 4
        FROM generate_series(${from + 1}::bigint, $to::bigint) AS i""").update.run.transact(lab.admin).void
    } *> Fragment.const(
      s"SELECT setval(pg_get_serial_sequence('${lab.schema("tasks")}', 'id'), ${n + 1})"
    ).query[Long].unique.transact(lab.admin).void

  /**
   * Enqueues `n` live tasks through the library, and marks a few keys' heads as failed once (their errors
   * hold an attempt) so that the keys page has blocked keys to put first.
   */
  def backlog(lab: LabDatabase, db: Database[IO], n: Int): IO[Unit] =
    queues.traverse_ { q =>
      val queue = TaskQueue[IO, Map[String, String]](db, q)
      (0 until n / queues.size).grouped(1000).toVector.traverse_(batch =>
        queue.enqueueMany(batch.map(i =>
          NewTask(
            Map("n" -> i.toString, "customer" -> s"c${i % 5000}"),
            priority = i % 3,
            delay = if i % 10 == 0 then 1.hour else Duration.Zero,
            orderingKey = Option.when(i % 2 == 0)(s"k${i % keys}")
          )
        )).void
      )
    } *> Fragment.const(s"""UPDATE ${lab.schema("tasks")} SET attempt = 1,
        errors = jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(), 'worker', 1, 'error', 'boom'))
      WHERE head AND ordering_key IN ('k0', 'k2', 'k4')""").update.run.transact(lab.admin).void

  /** Brings the planner's statistics and the visibility map up to date, as autovacuum would. */
  def settle(lab: LabDatabase): IO[Unit] =
    lab.autocommit(s"VACUUM ANALYZE ${lab.schema("finished")}") *>
      lab.autocommit(s"VACUUM ANALYZE ${lab.schema("tasks")}")

  /**
   * Updates every live task once, after [[settle]], and keeps autovacuum off `tasks` for the rest of the
   * run: no page of the backlog is all-visible any more, so an index-only scan has to visit the table for
   * each entry, as on a busy table between two vacuums. `ANALYZE` tells the planner so.
   */
  def rewrite(lab: LabDatabase): IO[Unit] =
    val tasks = lab.schema("tasks")
    lab.autocommit(s"ALTER TABLE $tasks SET (autovacuum_enabled = false)") *>
      lab.autocommit(s"UPDATE $tasks SET attempt = attempt") *> lab.autocommit(s"ANALYZE $tasks")
