package weir.postgres.internal

import cats.~>
import cats.effect.IO
import cats.syntax.all.*
import weir.postgres.{DbSuite, Rows, TestWorkers}
import weir.testing.RecordedLogs
import weir.testkit.Eventually
import org.typelevel.log4cats.{LoggerFactory, SelfAwareStructuredLogger}

import scala.concurrent.duration.*

/**
 * The heartbeat ([[Heartbeat]]) against a real server, on claims held without a worker ([[HeldClaims]]):
 * what one beat extends, what it finds gone or asked to stop, and that it registers its worker again.
 */
class HeartbeatSuite extends DbSuite:

  // a lease of a minute, beats every 50 ms: a claim whose lease is 15 s old is extended by the next beat
  private val config =
    TestWorkers.config("h").copy(heartbeat = 100.millis, lease = 1.minute, deadAfter = 5.seconds)

  /** Runs the heartbeat of `held`, logging to `log`, until `done` holds, at most 30 s. */
  private def beating(db: weir.postgres.Database[IO], held: HeldClaims, log: Option[WorkerLog[IO]] = None)(
      done: IO[Boolean]
  ): IO[Unit] =
    db.workerPool(size = 1).use(run =>
      Heartbeat.resource(run, held.worker, log.getOrElse(HeldClaims.silent(held.worker))).surround(
        Eventually.until("the heartbeat's effect", done, every = 20.millis)(identity).void
      )
    )

  private def leaseSeconds(db: weir.postgres.Database[IO], token: Long): IO[Double] =
    Rows.query[Double](
      s"SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM ${db.schema("tasks")} WHERE lease_token = $token"
    ).map(_.head)

  withDb(
    "a beat extends the leases of its claims a quarter of a lease old, and leaves the others' rows alone"
  ) {
    db =>
      HeldClaims.of(db, 3, config).use { held =>
        val Vector(due, fresh, forgotten) = held.tokens
        val tasks = db.schema("tasks")
        val quarter = Heartbeat.extendAfter(config.lease).toNanos
        for
          // `due` and `forgotten` claimed a quarter of a lease ago, by this worker's clock; all three leases end
          // in a second in the database, so a beat that extended one would show
          _ <- IO(Vector(due, forgotten).foreach(t => held.claims(t).leaseFrom -= quarter))
          _ <- Rows.exec(s"UPDATE $tasks SET lease_expires_at = now() + interval '1 second'")
          _ <- IO(held.worker.claims.finished(forgotten))
          _ <- beating(db, held)(leaseSeconds(db, due).map(_ > 5))
          freshLease <- leaseSeconds(db, fresh)
          forgottenLease <- leaseSeconds(db, forgotten)
          stillDue <- IO(held.worker.claims.due(System.nanoTime(), quarter).toSet)
        yield
          assert(freshLease <= 1, s"a claim not a quarter of a lease old is not extended: $freshLease s")
          assert(forgottenLease <= 1, s"a claim this worker forgot is not kept alive: $forgottenLease s")
          assertEquals(stillDue, Set.empty[Long], "the extended claim's lease starts again from its beat")
      }
  }

  withDb("a claim whose row is no longer this worker's is marked taken, counted and logged, once") {
    db =>
      (HeldClaims.of(db, 2, config), cats.effect.Resource.eval(RecordedLogs())).tupled.use { (held, logs) =>
        val Vector(rescued, kept) = held.tokens
        // every line takes 300 ms to write, many beats long: a heartbeat stopped as soon as the count is seen
        // is stopped while its line is being written
        val slow = new LoggerFactory[IO]:
          private val late = new (IO ~> IO):
            def apply[X](fa: IO[X]): IO[X] = IO.sleep(300.millis) *> fa
          def getLoggerFromName(name: String): SelfAwareStructuredLogger[IO] =
            logs.getLoggerFromName(name).mapK(late)
          def fromName(name: String): IO[SelfAwareStructuredLogger[IO]] = IO.pure(getLoggerFromName(name))
        val log = Some(new WorkerLog[IO](slow, config.queue, held.worker.owner))
        // what a rescue does to the row: available again, the lease gone
        Rows.exec(s"""UPDATE ${db.schema("tasks")} SET state = 'available', lease_owner = NULL,
            lease_expires_at = NULL, lease_token = NULL WHERE lease_token = $rescued""") *>
          // the wait is for the count, and the heartbeat is stopped as soon as it is seen, its line still being
          // written: the beat counts and logs in one step, so the line is there however the heartbeat stops
          beating(db, held, log)(IO(held.worker.counters.taken.get >= 1)) *>
          // and later beats count it no more
          beating(db, held, log)(IO(held.worker.counters.taken.get >= 1)) *> logs.lines.map { lines =>
            assertEquals(held.worker.counters.taken.get, 1L)
            assertEquals(held.claims(kept).state.refusal, None)
            assertEquals(held.claims(rescued).tryStart(), Some(Liveness.taken))
            assertEquals(
              lines.map(l => (l.level, l.logger)),
              Vector(("WARN", "weir.postgres.worker.heartbeat"))
            )
            assert(
              lines.head.message.startsWith(
                s"queue 'h', worker ${held.worker.owner}: taken for dead: another worker rescued 1 of its running claims"
              ),
              lines.head.message
            )
          }
      }
  }

  withDb("a claim whose cancel was requested is told to stop, with the reason") {
    db =>
      HeldClaims.of(db, 2, config).use { held =>
        val Vector(cancelled, other) = held.tokens
        Rows.exec(
          s"UPDATE ${db.schema("tasks")} SET cancel_requested = 'stop it' WHERE lease_token = $cancelled"
        ) *>
          beating(db, held)(IO(held.claims(cancelled).state.refusal.isDefined)) *> IO {
            assertEquals(held.claims(cancelled).tryStart(), Some("cancelled: stop it"))
            assertEquals(held.claims(other).state.refusal, None)
          }
      }
  }

  withDb("a worker whose row a rescuer removed registers again under the same id at its next beat") {
    db =>
      HeldClaims.of(db, 1, config).use { held =>
        val workers = db.schema("workers")
        val owner = held.worker.owner
        Rows.exec(s"DELETE FROM $workers WHERE id = $owner") *>
          beating(db, held)(Rows.count(db, "workers", s"id = $owner").map(_ == 1L)).as(())
      }
  }

  withDb("each beat that commits keeps the worker's claims free to start") {
    db =>
      HeldClaims.of(db, 1, config).use { held =>
        val token = held.tokens.head
        // a second and a half without a beat: more than three quarters of a period, so claims may not start
        IO.sleep(150.millis) *> IO(assert(held.claims(token).tryStart().isDefined)) *>
          beating(db, held)(IO(held.worker.liveness.refusal.isEmpty))
      }
  }
