package weir.postgres

import cats.effect.{IO, Ref, Resource}

import doobie.*
import doobie.implicits.*
import weir.Pipeline
import weir.postgres.internal.Sql
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * A process that dies inside one of weir's transactions: the claim, the rescue, the migration. The server
 * sees the death as its session ending with the transaction open, so each test opens the transaction on a
 * connection of its own, leaves it uncommitted, and ends that session with `pg_terminate_backend`; what
 * the transaction did must vanish with it, and the next worker or migration must take over.
 */
class CrashPointsSuite extends DbSuite:

  private def run[A](db: Database[IO], io: ConnectionIO[A]): IO[A] = io.transact(db.transactor)

  /** A session whose transaction is never committed, and its server process id. */
  private def doomed: Resource[IO, (Transactor[IO], Int)] = TestDatabase.doomed

  // waits until the process has exited (PostgreSQL 14+), its transaction aborted and its row locks gone:
  // the one-argument form returns once the signal is sent, and a rescue right after it skipped the rows the
  // dying transaction still held
  private def kill(pid: Int): IO[Unit] =
    Rows.select(s"SELECT pg_terminate_backend($pid, 10000)").void

  /**
   * Sessions waiting for the one-integer advisory lock `key`, which the server shows as the key's two
   * halves (`classid`, the high 32 bits; `objid`, the low ones).
   */
  private def waitersOn(key: Long): IO[Long] =
    sql"""SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND NOT granted
          AND (classid::bigint << 32) | objid::bigint = $key""".query[Long].unique.transact(
      TestDatabase.admin
    )

  withDb("a worker that dies before its claim commits holds nothing: another worker runs every task once") {
    db =>
      val sql = new Sql(db.schema)
      val queue = TaskQueue[IO, Int](db, "c")
      val tasks = (1 to 20).map(i => NewTask(i, orderingKey = Option.when(i % 2 == 0)(s"k${i % 4}")))
      for
        _ <- queue.enqueueMany(tasks)
        owner <- run(db, sql.register("doomed", 1000))
        claimed <- doomed.use { (xa, pid) =>
          sql.claim("c", owner, 100, 60000).map(_.rows).transact(xa).flatTap(_ => kill(pid))
        }
        left <- Rows.tasks(db)
        ran <- Ref[IO].of(Vector.empty[Int])
        _ <- DurableWorker
          .start[IO, Int, Unit](db, TestWorkers.config("c"))(source =>
            Pipeline(source).process(job => ran.update(_ :+ job.payload))
          )
          .use(_.running.join)
        runs <- ran.get
      yield
        assert(claimed.nonEmpty, "the doomed claim took nothing, so the test shows nothing")
        assert(
          left.forall((_, state, attempt, owner, _) => state == "available" && attempt == 0 && owner.isEmpty),
          left
        )
        assertEquals(runs.sorted, (1 to 20).toVector)
  }

  withDb(
    "a rescuer that dies mid-rescue frees nothing; the next rescue frees every task, attempts counted once"
  ) {
    db =>
      val sql = new Sql(db.schema)
      val queue = TaskQueue[IO, Int](db, "r")
      for
        _ <- queue.enqueueMany((1 to 10).map(NewTask(_)))
        dead <- run(db, sql.register("dead", 1000))
        _ <- run(db, sql.claim("r", dead, 100, 60000).map(_.rows))
        _ <- Rows.exec(
          s"UPDATE ${db.schema("workers")} SET heartbeat_at = now() - interval '1 hour' WHERE id = $dead"
        )
        first <-
          doomed.use((xa, pid) => sql.rescue(10000, 1000, leases = true).transact(xa).flatTap(_ => kill(pid)))
        still <- Rows.tasks(db)
        second <- run(db, sql.rescue(10000, 1000, leases = true))
        after <- Rows.tasks(db)
      yield
        assertEquals(first, (10, 0, 0))
        assert(still.forall(t => t._2 == "running" && t._4.contains(dead)), still)
        assertEquals(second, (10, 0, 0))
        assert(after.forall(t => t._2 == "available" && t._3 == 1), after)
  }

  test(
    "a process that dies mid-migration applies nothing; a migration waiting on it then applies everything"
  ) {
    val schema = TestDatabase.freshSchema()
    val config = TestDatabase.config(schema)
    val body = doomed.use { (xa, pid) =>
      for
        half <- Migrations.migrate(schema).transact(xa)
        // a second process migrates meanwhile: the server shows it waiting on the first one's lock, so the
        // kill below happens while it waits, not before it has asked
        waiting <- Database.migrate[IO](config).start
        _ <- Eventually.until(
          "the second migration to wait on the first one's lock",
          waitersOn(schema.key("migrate")),
          within = 20.seconds,
          every = 20.millis
        )(_ == 1L)
        _ <- kill(pid)
        applied <- waiting.joinWithNever
        versions <- Database.connect[IO](config).use(_ => IO.unit).attempt
      yield
        assertEquals(half, Migrations.all.map(_.version))
        assertEquals(applied, Migrations.all.map(_.version))
        assert(versions.isRight, versions.toString)
    }
    body.guarantee(TestDatabase.drop(schema)) *> noLeftovers
  }
