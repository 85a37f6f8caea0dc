package weir.postgres.internal

import cats.effect.{Deferred, IO, Resource}
import cats.effect.std.Queue
import doobie.WeakAsync
import doobie.free.KleisliInterpreter
import doobie.util.log.LogHandler
import doobie.util.transactor.{Strategy, Transactor}
import munit.CatsEffectSuite
import org.typelevel.log4cats.noop.NoOpFactory
import weir.postgres.{Schema, WorkerConfig}

import java.sql.SQLException
import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger}
import scala.concurrent.duration.*

/**
 * The session's answer to a notification ([[Notifier]]) while the claimer waits, without a server: a
 * session whose every claim fails at once, and counts its connections, shows whether a claim was tried.
 */
class NotifierSuite extends CatsEffectSuite:

  /** A session that fails every claim when it connects, and counts how often it did. */
  private final class Session:
    val connects = new AtomicInteger
    val here: Transactor[IO] = Transactor[IO, Unit](
      (),
      _ =>
        Resource.eval(IO(connects.incrementAndGet()) *> IO.raiseError(new SQLException("no server here"))),
      KleisliInterpreter[IO](LogHandler.noop[IO])(using
        WeakAsync.doobieWeakAsyncForAsync[IO]
      ).ConnectionInterpreter,
      Strategy.void
    )

  /**
   * A member whose last committed beat is `late` (a period of a nanosecond: every moment is three quarters of
   * one past it) or young (a period of an hour), its claimer waiting for the rows of `rows`.
   */
  private def member(late: Boolean, rows: Deferred[IO, Sql.Claim]): IO[WorkerSession.Member[IO]] =
    val config = WorkerConfig(queue = "n")
    val counters = new Counters
    val worker = new WorkerContext(
      1L,
      config,
      Schema.default,
      new Sql(Schema.default),
      new Claims,
      counters,
      new Liveness(if late then 1.nanosecond else 1.hour),
      new AtomicBoolean
    )
    for
      gate <- IdleGate[IO]
      wake <- Queue.dropping[IO, Unit](1)
      faults <- new WorkerLog[IO](
        NoOpFactory[IO],
        config.queue,
        worker.owner
      ).faults("session", "the session", counters)
      _ <- gate.waiting(rows)
    yield new WorkerSession.Member(worker, gate, wake, faults)

  /** What a notification did for a member whose beat is `late`: the session's connects, and what the claimer got. */
  private final case class Notified(
      connects: Int,
      result: Either[Throwable, Unit],
      woken: Option[Unit],
      resumed: Option[Deferred[IO, Sql.Claim]],
      handed: Option[Sql.Claim]
  )

  private def notify(late: Boolean): IO[Notified] =
    val session = new Session
    for
      rows <- Deferred[IO, Sql.Claim]
      m <- member(late, rows)
      result <- new Notifier[IO](session.here).notified(m).attempt
      woken <- m.wake.tryTake
      resumed <- m.gate.resume
      handed <- rows.tryGet
    yield Notified(session.connects.get, result, woken, resumed, handed)

  test(
    "a worker whose heartbeat is late claims nothing on a notification: its claimer is woken, and keeps the turn"
  ) {
    notify(late = true).map { n =>
      assertEquals(n.connects, 0, "the session claimed for a worker whose beat is late")
      assertEquals(n.result, Right(()))
      assertEquals(n.woken, Some(()))
      assertEquals(n.resumed, None, "the claimer claims itself, once a beat has committed")
      assertEquals(n.handed, None)
    }
  }

  test(
    "a worker whose heartbeat is young: the session claims while its claimer waits, and hands it the rows"
  ) {
    notify(late = false).map { n =>
      assertEquals(n.connects, 1)
      assert(n.result.left.exists(_.getMessage == "no server here"), n.result.toString)
      assertEquals(n.woken, None)
      assert(n.handed.exists(_.rows.isEmpty), "the claimer gets the failed claim's (empty) rows")
    }
  }
