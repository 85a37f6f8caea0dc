package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.Pipeline
import weir.postgres.internal.Sql

import java.sql.DriverManager

/**
 * The `head` marks the claim relies on to skip a key's waiting tasks: set by enqueues, moved on by every
 * removal, repaired when a race leaves a key without one, and computed by the migration that adds them.
 */
class KeyHeadsSuite extends DbSuite:

  private def run[A](db: Database[IO], io: ConnectionIO[A]): IO[A] = io.transact(db.transactor)

  /** `(id, payload, ordering key, head)` of every keyed task. */
  private def marks(db: Database[IO]): IO[Vector[(Long, String, String, Boolean)]] =
    Fragment
      .const(
        s"SELECT id, payload::text, ordering_key, head FROM ${db.schema("tasks")} WHERE ordering_key IS NOT NULL ORDER BY id"
      )
      .query[(Long, String, String, Boolean)]
      .to[Vector]
      .transact(TestDatabase.admin)

  /** The keys whose earliest task is not marked: a claim would never find them. */
  private def headless(schema: Schema): IO[Long] =
    val t = schema("tasks")
    Fragment.const(
      s"""SELECT count(*) FROM $t AS t WHERE t.ordering_key IS NOT NULL AND NOT t.head
      AND NOT EXISTS (SELECT 1 FROM $t AS e WHERE e.queue = t.queue AND e.ordering_key = t.ordering_key AND e.id < t.id)"""
    )
      .query[Long]
      .unique
      .transact(TestDatabase.admin)

  /** The payloads of the marked keyed tasks. */
  private def marked(all: Vector[(Long, String, String, Boolean)]): Vector[String] =
    all.filter(_._4).map(_._2)

  withDb("an enqueue marks each key's first task only; every removal marks its key's next task") { db =>
    val sql = new Sql(db.schema)
    val q = TaskQueue[IO, Int](db, "h")
    val admin = TaskAdmin(db)
    def step(name: String, want: Vector[String]): IO[Unit] =
      (marks(db), headless(db.schema)).flatMapN { (all, orphans) =>
        IO(assertEquals(marked(all).sorted, want.sorted, s"$name: $all")) *>
          IO(assertEquals(orphans, 0L, s"$name: a key without its head marked: $all"))
      }
    for
      // one batch: a×3, b×2, c×1 (c1 may go dead at once), and tasks without a key
      _ <- q.enqueueMany(
        Vector(
          NewTask(1, orderingKey = Some("a")),
          NewTask(2, orderingKey = Some("b")),
          NewTask(3),
          NewTask(4, orderingKey = Some("a")),
          NewTask(5, orderingKey = Some("c"), maxAttempts = 1),
          NewTask(6, orderingKey = Some("b")),
          NewTask(7, orderingKey = Some("a"))
        )
      )
      _ <- step("after the batch", Vector("1", "2", "5"))
      // one at a time and through the SQL function: a key already present is not marked, a new one is
      _ <- q.enqueue(NewTask(8, orderingKey = Some("c")))
      _ <- Rows.enqueueSql(s"${db.schema("enqueue")}('h', '9', ordering_key => 'd')")
      _ <- Rows.enqueueSql(s"${db.schema("enqueue")}('h', '10', ordering_key => 'd')")
      _ <- step("after single enqueues", Vector("1", "2", "5", "9"))
      owner <- run(db, sql.register("w", 1000))
      claimed <- run(db, sql.claim("h", owner, 100, 60000).map(_.rows))
      _ = assertEquals(claimed.map(_.payload).sorted, Vector("1", "2", "3", "5", "9"))
      token = claimed.map(c => c.payload -> c.token).toMap
      // completion: a's next
      _ <- run(db, sql.complete(Array(token("1")), keep = false, keyed = true))
      _ <- step("after completing a1", Vector("2", "4", "5", "9"))
      // failure to dead: b's next
      _ <- run(db, sql.fail(Array(token("2")), Array("boom"), Array(-1L)))
      _ <- step("after b1 went dead", Vector("4", "5", "6", "9"))
      // rescue to dead (c1 has one attempt): c's next
      _ <- Rows.exec(
        s"UPDATE ${db.schema("workers")} SET heartbeat_at = now() - interval '1 hour' WHERE id = $owner"
      )
      rescued <- run(db, sql.rescue(10000, 1000, leases = true))
      _ = assertEquals(rescued, (2, 1, 0)) // 3 and 9 back to available, 5 dead
      _ <- step("after c1 was rescued dead", Vector("4", "6", "8", "9"))
      // cancel: the marked a4 is cancelled, a7 is next
      a4 <- marks(db).map(_.collectFirst { case (id, "4", _, _) => id })
      cancelled <- admin.tasks.cancel(a4.getOrElse(fail("a4 is gone")))
      _ = assertEquals(cancelled, Cancel.Cancelled)
      _ <- step("after a4 was cancelled", Vector("6", "7", "8", "9"))
    yield ()
  }

  withDb("a key whose last task is removed while an enqueue of the key is uncommitted gets its head marked") {
    db =>
      val sql = new Sql(db.schema)
      val q = TaskQueue[IO, Int](db, "o")
      val outbox = IO.blocking {
        val (jdbc, props) = DatabaseConfig.toJdbc(TestDatabase.url)
        val c = DriverManager.getConnection(jdbc, props)
        c.setAutoCommit(false)
        c
      }
      outbox.bracket { c =>
        for
          _ <- q.enqueue(NewTask(1, orderingKey = Some("k")))
          owner <- run(db, sql.register("w", 1000))
          first <- run(db, sql.claim("o", owner, 10, 60000).map(_.rows))
          // the outbox transaction enqueues behind the running task and has not committed when it completes
          _ <- IO.blocking(
            c.createStatement().execute(
              s"SELECT * FROM ${db.schema("enqueue")}('o', '2', ordering_key => 'k')"
            )
          )
          _ <- run(db, sql.complete(first.map(_.token).toArray, keep = false, keyed = true))
          _ <- IO.blocking(c.commit())
          orphans <- headless(db.schema)
          none <- run(db, sql.claim("o", owner, 10, 60000).map(_.rows))
          repaired <- run(db, sql.repairHeads)
          again <- run(db, sql.repairHeads)
          second <- run(db, sql.claim("o", owner, 10, 60000).map(_.rows))
        yield
          assertEquals(orphans, 1L, "the race this repair exists for did not happen")
          assertEquals(none, Vector.empty)
          assertEquals(repaired, Vector("o"))
          assertEquals(again, Vector.empty)
          assertEquals(second.map(_.payload), Vector("2"))
      }(c => IO.blocking(c.close()))
  }

  withDb("a worker finds a task left without its head mark at its next poll") { db =>
    val sql = new Sql(db.schema)
    val q = TaskQueue[IO, Int](db, "p")
    for
      _ <- q.enqueueMany((1 to 3).map(i => NewTask(i, orderingKey = Some("k"))))
      // plant the state the race leaves: no task of the key marked
      _ <- Rows.exec(s"UPDATE ${db.schema("tasks")} SET head = false")
      none <- run(db, sql.claim("p", 0L, 10, 60000).map(_.rows))
      summary <- DurableWorker
        .start[IO, Int, Unit](db, TestWorkers.config("p"))(source => Pipeline(source).process(_ => IO.unit))
        .use(_.running.join)
      done <- Rows.finished(db)
    yield
      assertEquals(none, Vector.empty)
      assertEquals(summary.succeeded, 3L)
      assertEquals(done.map(_._1), Vector("1", "2", "3"))
  }

  test("the migration that adds the marks computes them for a version-1 schema's backlog") {
    val schema = TestDatabase.freshSchema()
    val config = TestDatabase.config(schema)
    val v1 = Migrations.all.head
    val setup =
      Rows.exec(s"CREATE SCHEMA ${schema.name}") *>
        Rows.exec(v1.sql.replace("weir_schema", schema.name)) *>
        Rows.exec(
          s"CREATE TABLE ${schema("migrations")} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        ) *>
        Rows.exec(s"INSERT INTO ${schema("migrations")} (version, name) VALUES (1, '${v1.name}')") *>
        Rows.exec(s"""INSERT INTO ${schema("tasks")} (queue, payload, ordering_key)
          SELECT 'm', to_jsonb(i), CASE WHEN i % 3 = 0 THEN NULL ELSE 'k' || (i % 3) END
          FROM generate_series(1, 30) AS i""")
    val body =
      for
        _ <- setup
        applied <- Database.migrate[IO](config)
        all <- Database.connect[IO](config).use(db => marks(db))
        orphans <- headless(schema)
      yield
        assertEquals(applied, Migrations.all.drop(1).map(_.version))
        val firsts = all.groupBy(_._3).values.map(_.minBy(_._1)._1).toSet
        assertEquals(all.filter(_._4).map(_._1).toSet, firsts)
        assertEquals(firsts.size, 2)
        assertEquals(orphans, 0L)
    body.guarantee(TestDatabase.drop(schema)) *> noLeftovers
  }
