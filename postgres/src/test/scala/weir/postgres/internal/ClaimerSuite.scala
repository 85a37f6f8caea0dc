package weir.postgres.internal

import cats.effect.{Deferred, IO, Ref}
import cats.effect.std.Queue
import doobie.ConnectionIO
import weir.postgres.{Database, DbSuite, Job, NewTask, Rows, TaskQueue, TestWorkers, WorkerConfig}
import weir.testkit.Eventually

import java.sql.SQLException
import scala.concurrent.duration.*

/**
 * The claimer ([[Claimer]]) against a real server, through a [[Run]] whose single statements (the claims)
 * it counts and can fail: batches, decoding failures, a key's unique violation, database errors, a late
 * heartbeat, wake-ups and the stop.
 */
class ClaimerSuite extends DbSuite:

  /** A [[Run]] around `run` whose single statements are counted, and refused by `refuse` when it says so. */
  private final class Probe(run: Run[IO], refuse: Int => Option[SQLException]) extends Run[IO]:
    val claims: Ref[IO, Int] = Ref.unsafe(0)
    def apply[A](program: ConnectionIO[A]): IO[A] = run(program)
    def single[A](program: ConnectionIO[A]): IO[A] =
      claims.updateAndGet(_ + 1).flatMap(n => refuse(n).fold(run.single(program))(IO.raiseError))

  private val base = TestWorkers.config("claims").copy(stopWhenEmpty = false, pollInterval = 1.hour)

  private final case class Fixture(
      worker: WorkerContext,
      probe: Probe,
      wake: Queue[IO, Unit],
      gate: IdleGate[IO],
      stop: Deferred[IO, Unit]
  )

  /**
   * A claimer of `config`'s queue as a stream, with what drives it, for `body`; with `beating`, the
   * worker's heartbeat runs beside it (on a pool of its own: the probe counts claims only), so that its
   * claims may start.
   */
  private def claimer[A: weir.postgres.PayloadCodec, B](
      db: Database[IO],
      config: WorkerConfig,
      refuse: Int => Option[SQLException] = _ => None,
      beating: Boolean = true
  )(body: (fs2.Stream[IO, Job[A]], Fixture) => IO[B]): IO[B] =
    HeldClaims.context(db, config).use { worker =>
      val heartbeat =
        if beating then
          db.workerPool(size = 1).flatMap(Heartbeat.resource(_, worker, HeldClaims.silent(worker)))
        else cats.effect.Resource.unit[IO]
      heartbeat.flatMap(_ => db.workerPool(size = 2)).use { pool =>
        val probe = new Probe(pool, refuse)
        Completer.resource(probe, worker, IO.unit, HeldClaims.silent(worker)).use { completer =>
          for
            wake <- Queue.dropping[IO, Unit](1)
            stop <- Deferred[IO, Unit]
            gate <- IdleGate[IO]
            faults <- HeldClaims.silent(worker).faults("claims", "claiming", worker.counters)
            c = new Claimer[IO, A](
              probe,
              worker,
              completer,
              wake,
              gate,
              stop,
              HeldClaims.silent(worker),
              faults
            )
            result <- body(c.stream, Fixture(worker, probe, wake, gate, stop))
          yield result
        }
      }
    }

  withDb("full batches are claimed back to back, each task recorded in the claims before it is emitted") {
    db =>
      val config = base.copy(claimBatch = 10)
      TaskQueue[IO, Int](db, config.queue).enqueueMany((1 to 25).map(NewTask(_))) *>
        claimer[Int, Unit](db, config) { (jobs, f) =>
          jobs.evalMap(j => IO(assert(f.worker.claims.tokens.contains(j.token))).as(j.payload))
            .take(25).compile.toVector.timeout(30.seconds).flatMap { payloads =>
              f.probe.claims.get.map { claims =>
                assertEquals(payloads, (1 to 25).toVector)
                // 10, 10, then 5: a short batch, after which the claimer waits
                assertEquals(claims, 3)
                assertEquals(f.worker.counters.claimed.get, 25L)
              }
            }
        }
  }

  withDb("a payload that does not decode goes to dead with its error and is never emitted") {
    db =>
      val config = base
      TaskQueue[IO, String](db, config.queue).enqueueMany(Vector(NewTask("not a number"))) *>
        TaskQueue[IO, Int](db, config.queue).enqueueMany(Vector(NewTask(7))) *>
        claimer[Int, Vector[Int]](db, config)((jobs, _) =>
          jobs.map(_.payload).take(1).compile.toVector.timeout(30.seconds)
        ).flatMap { emitted =>
          Rows.finished(db).map { rows =>
            assertEquals(emitted, Vector(7))
            assertEquals(rows.map(r => (r._1, r._2)), Vector(("\"not a number\"", "dead")))
            assert(rows.head._4.contains("payload does not decode"), rows.head._4)
          }
        }
  }

  withDb("a claim refused for a key's second running task is made again at once, and is no error") {
    db =>
      val violation = new SQLException("duplicate key", Claimer.uniqueViolation)
      TaskQueue[IO, Int](db, base.queue).enqueueMany(Vector(NewTask(1))) *>
        claimer[Int, Unit](db, base, refuse = n => Option.when(n == 1)(violation)) { (jobs, f) =>
          jobs.take(1).compile.drain.timeout(30.seconds) *> IO {
            assertEquals(f.worker.counters.databaseErrors.get, 0L)
          }
        }
  }

  withDb("a database error is counted and the claim made again after a backoff; the stream goes on") {
    db =>
      TaskQueue[IO, Int](db, base.queue).enqueueMany(Vector(NewTask(1))) *>
        claimer[Int, Unit](db, base, refuse = n => Option.when(n <= 2)(new SQLException("unreachable"))) {
          (jobs, f) =>
            jobs.take(1).compile.drain.timeout(30.seconds) *> f.probe.claims.get.map { claims =>
              assertEquals(f.worker.counters.databaseErrors.get, 2L)
              assertEquals(claims, 3)
            }
        }
  }

  withDb("a worker whose last beat is too old claims nothing until a beat commits") {
    db =>
      // no heartbeat runs here: the context's registration is its last beat, stale after 75 ms
      val config = base.copy(heartbeat = 100.millis, deadAfter = 5.seconds)
      TaskQueue[IO, Int](db, config.queue).enqueueMany(Vector(NewTask(1))) *>
        claimer[Int, Unit](db, config, beating = false) { (jobs, f) =>
          // the registration's beat is at least 150 ms old before the first claim can be tried
          IO.sleep(150.millis) *> jobs.take(1).compile.drain.start.flatMap { taking =>
            for
              _ <- IO.sleep(300.millis)
              before <- f.probe.claims.get
              // beats from now on, as the heartbeat would send them
              beats = (IO(f.worker.liveness.confirmed(System.nanoTime())) *> IO.sleep(20.millis)).foreverM
              _ <- beats.background.surround(taking.joinWithNever.timeout(30.seconds))
            yield assertEquals(before, 0, "claims made while the last beat was stale")
          }
        }
  }

  withDb("a wake-up ends the wait for the poll: a task enqueued then claims at once") {
    db =>
      claimer[Int, Unit](db, base) { (jobs, f) =>
        jobs.take(1).compile.drain.start.flatMap { taking =>
          // the first claim found nothing: the claimer waits for its poll, an hour
          Eventually.until("a first claim", f.probe.claims.get, every = 20.millis)(_ >= 1) *>
            TaskQueue[IO, Int](db, base.queue).enqueueMany(Vector(NewTask(1))) *> f.wake.offer(()) *>
            taking.joinWithNever.timeout(30.seconds)
        }
      }
  }

  withDb(
    "a wake-up the claimer takes while the session's claim is under way is not lost: it claims again after those rows"
  ) { db =>
    claimer[Int, Unit](db, base) { (jobs, f) =>
      jobs.take(1).compile.drain.start.flatMap { taking =>
        for
          // the first claim found nothing (a claimer that starts before its worker's first beat skips its
          // claims until that beat, and idles meanwhile: so wait for the claim itself); while the claimer
          // waits for its poll, the session takes the turn and begins a claim, which cannot see the task
          // enqueued next
          _ <- Eventually.until("a first claim", f.probe.claims.get, every = 5.millis)(_ >= 1)
          into <- Eventually.defined("the session's claim", f.gate.sessionClaims, every = 5.millis)
          _ <- TaskQueue[IO, Int](db, base.queue).enqueueMany(Vector(NewTask(1)))
          // the task's notification, which finds the session's claim under way: a wake-up, taken by the
          // claimer before the session's rows are there
          _ <- f.wake.offer(())
          _ <- Eventually.until("the wake-up taken", f.wake.size, every = 5.millis)(_ == 0)
          _ <- into.complete(Sql.Claim.empty)
          // the poll is an hour away: only a claim made for the wake-up finds the task
          _ <- taking.joinWithNever.timeoutTo(
            30.seconds,
            f.probe.claims.get.flatMap(n =>
              IO(fail(s"the wake-up was lost: $n claims, the task still waits"))
            )
          )
          claims <- f.probe.claims.get
        yield assertEquals(claims, 2)
      }
    }
  }

  withDb("a stop ends the stream at once, even while the claimer waits for its poll") {
    db =>
      claimer[Int, Vector[Job[Int]]](db, base) { (jobs, f) =>
        jobs.compile.toVector.start.flatMap { all =>
          Eventually.until("a first claim", f.probe.claims.get, every = 20.millis)(_ >= 1) *>
            f.stop.complete(()) *> all.joinWithNever.timeout(30.seconds)
        }
      }.map(jobs => assertEquals(jobs, Vector.empty))
  }
