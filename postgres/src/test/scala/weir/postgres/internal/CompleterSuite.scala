package weir.postgres.internal

import cats.effect.{Deferred, IO, Ref, Resource}
import cats.syntax.all.*
import doobie.ConnectionIO
import fs2.Chunk
import weir.postgres.{Database, DbSuite, Rows, TestWorkers, WorkerConfig}
import weir.testkit.Eventually

import java.sql.SQLException
import scala.concurrent.duration.*

/**
 * The completer ([[Completer]]) against a real server, through a [[Run]] that counts its transactions and
 * can hold one back or fail it: batching (a lone finish at once, what arrived meanwhile in the next
 * batch), writing again until committed without writing twice, backpressure, and its release.
 */
class CompleterSuite extends DbSuite:

  /** A [[Run]] around `run`: counts transactions; `before` runs ahead of each, `after` once it committed. */
  private final class Probe(run: Run[IO], before: Int => IO[Unit], after: Int => IO[Unit]) extends Run[IO]:
    val transactions: Ref[IO, Int] = Ref.unsafe(0)
    def apply[A](program: ConnectionIO[A]): IO[A] =
      transactions.updateAndGet(_ + 1).flatMap(n => before(n) *> run(program) <* after(n))
    def single[A](program: ConnectionIO[A]): IO[A] = run.single(program)

  private def claimed(
      db: Database[IO],
      n: Int,
      config: WorkerConfig
  ): Resource[IO, (WorkerContext, Vector[Long])] =
    HeldClaims.of(db, n, config).map(h => (h.worker, h.tokens))

  private val config = TestWorkers.config("c")

  /** Runs `body` with a completer of `worker` writing through `probe` over a pool of `db`'s. */
  private def completer[A](db: Database[IO], worker: WorkerContext)(
      before: Int => IO[Unit] = _ => IO.unit,
      after: Int => IO[Unit] = _ => IO.unit
  )(body: (Completer[IO], Probe) => IO[A]): IO[A] =
    db.workerPool(size = 2).use { pool =>
      val probe = new Probe(pool, before, after)
      Completer.resource(probe, worker, IO.unit, HeldClaims.silent(worker)).use(body(_, probe))
    }

  private def completed(worker: WorkerContext, n: Long): IO[Unit] =
    Eventually.until(s"$n completed", IO(worker.counters.completed.get), every = 20.millis)(_ >= n).void

  withDb("a lone finish is written at once; what arrives while it is written goes in the next batch, whole") {
    db =>
      claimed(db, 6, config).use { (worker, tokens) =>
        for
          gate <- Deferred[IO, Unit]
          firstWriting <- Deferred[IO, Unit]
          transactions <- completer(db, worker)(before =
            n => (firstWriting.complete(()) *> gate.get).whenA(n == 1)
          ) { (c, probe) =>
            c.submit(Finish.Complete(tokens.head)) *> firstWriting.get *>
              tokens.tail.traverse_(t => c.submit(Finish.Complete(t))) *> gate.complete(()) *>
              completed(worker, 6) *> probe.transactions.get
          }
          left <- Rows.count(db, "tasks")
        yield
          assertEquals(
            transactions,
            2,
            "the first finish alone, then the five that came while it was written"
          )
          assertEquals(left, 0L)
          assertEquals(worker.claims.size, 0)
      }
  }

  withDb("a batch whose transaction fails is written again until it commits") {
    db =>
      claimed(db, 3, config).use { (worker, tokens) =>
        for
          transactions <- completer(db, worker)(before =
            n => IO.raiseError(new SQLException(s"refused $n")).whenA(n <= 2)
          ) { (c, probe) =>
            c.submitAll(Chunk.from(tokens.map(Finish.Complete(_)))) *> completed(worker, 3) *>
              probe.transactions.get
          }
          finished <- Rows.count(db, "finished")
        yield
          assertEquals(transactions, 3)
          assertEquals(worker.counters.databaseErrors.get, 2L)
          assertEquals(finished, 3L)
      }
  }

  withDb("a batch committed whose answer was lost is written again and changes nothing the second time") {
    db =>
      claimed(db, 3, config).use { (worker, tokens) =>
        for
          transactions <- completer(db, worker)(after =
            n => IO.raiseError(new SQLException("the answer was lost")).whenA(n == 1)
          ) { (c, probe) =>
            c.submitAll(Chunk.from(tokens.map(Finish.Complete(_)))) *>
              Eventually.until("2 transactions", probe.transactions.get, every = 20.millis)(_ >= 2) *>
              Eventually.until("no claim held", IO(worker.claims.size), every = 20.millis)(_ == 0) *>
              probe.transactions.get
          }
          finished <- Rows.count(db, "finished")
          left <- Rows.count(db, "tasks")
        yield
          assertEquals(transactions, 2)
          // the first transaction's counts were lost with its answer; the second found the claims finished
          assertEquals(worker.counters.completed.get, 0L)
          assertEquals((finished, left), (3L, 0L))
      }
  }

  withDb("a submit waits while four batches are queued, and goes on once the writer takes them") {
    db =>
      val small = config.copy(ackBatch = 2)
      claimed(db, 10, small).use { (worker, tokens) =>
        for
          gate <- Deferred[IO, Unit]
          firstWriting <- Deferred[IO, Unit]
          blocked <- completer(db, worker)(before =
            n => (firstWriting.complete(()) *> gate.get).whenA(n == 1)
          ) { (c, _) =>
            for
              _ <- c.submit(Finish.Complete(tokens.head)) *> firstWriting.get
              // the writer holds the first; eight more fill the room of four batches of two
              _ <- tokens.slice(1, 9).traverse_(t => c.submit(Finish.Complete(t)))
              last <- c.submit(Finish.Complete(tokens(9))).start
              blocked <- last.join.timeout(300.millis).attempt.map(_.isLeft)
              _ <- gate.complete(())
              _ <- last.joinWithNever
              _ <- completed(worker, 10)
            yield blocked
          }
        yield assert(blocked, "the tenth submit went through while four batches were queued")
      }
  }

  withDb("a release writes every finish submitted before it") {
    db =>
      claimed(db, 20, config).use { (worker, tokens) =>
        completer(db, worker)()((c, _) => tokens.traverse_(t => c.submit(Finish.Complete(t)))) *>
          Rows.count(db, "finished").map(finished => assertEquals(finished, 20L))
      }
  }

  withDb("with the database unreachable, a release gives up after the release grace; the claims stay") {
    db =>
      claimed(db, 2, config.copy(releaseGrace = 1.second)).use { (worker, tokens) =>
        completer(db, worker)(before = _ => IO.raiseError(new SQLException("unreachable"))) { (c, probe) =>
          c.submitAll(Chunk.from(tokens.map(Finish.Complete(_)))).as(probe)
        }.flatMap { probe =>
          (probe.transactions.get, Rows.count(db, "tasks")).mapN { (attempts, left) =>
            // it kept trying through the grace (backoff from 50 ms), and the release still returned
            assert(attempts >= 2, s"$attempts attempt(s) to write before giving up")
            assertEquals(left, 2L)
            // the worker's last step hands back what is still held
            assertEquals(worker.claims.tokens.toSet, tokens.toSet)
          }
        }
      }
  }
