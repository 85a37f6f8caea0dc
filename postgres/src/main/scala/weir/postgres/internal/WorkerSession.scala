package weir.postgres.internal

import cats.effect.kernel.{Async, Deferred, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import doobie.implicits.*
import org.postgresql.PGConnection

import java.sql.{Connection, SQLException}
import java.util.concurrent.{Executors, ThreadFactory}
import scala.concurrent.ExecutionContext
import scala.concurrent.duration.*

/**
 * Owns the worker's own session, a connection outside the pool, on a thread of its own, that does two
 * things. It listens: a notification naming the worker's queue wakes its claimer, or, when the claimer is
 * idle, is answered at once with a claim on this connection whose rows go to the claimer (see
 * [[IdleGate]]), since this thread and its server process are the two that are awake; and one on the
 * cancel channel naming a claim of this worker interrupts its task ([[Claims.interrupt]]). And it holds the
 * worker's session lock (see [[Sql.holdSession]]), which the server frees when the process dies, so that
 * other workers rescue its tasks within a heartbeat instead of after `deadAfter`. Its connection's sockets
 * come from [[ImmediatePeekSocketFactory]], so that pgjdbc hands a notification on without first waiting a
 * millisecond for another.
 *
 * The connection is checked with a query every `checkEvery`, so one that died without a word (a restarted
 * server, a dropped TCP session) is found and opened again; each new connection also wakes the claimer
 * once, for whatever was enqueued while no one listened, and takes the lock again. A lock still held by a
 * previous session of this worker that the server has not ended (its connection went silent rather than
 * closed) cannot be taken: the check ends that session and takes the lock at the next check; meanwhile the
 * old session's lock says the same thing. Until the connection is back the claimer still polls, so a lost
 * session delays tasks by at most the poll interval and loses none; the worker's heartbeat, on its pool,
 * keeps it from being taken for dead.
 */
private[postgres] object WorkerSession:

  /** How often the session is checked with a query. */
  val checkEvery: FiniteDuration = 5.seconds

  /** How long one wait for notifications blocks its thread (and so how long a release may wait for it). */
  val waitSlice: FiniteDuration = 250.millis

  /**
   * The session of `worker`, on connections from `open`, checked every `checkEvery`; its claims go to the
   * claimer through `gate`, and `wake` wakes the claimer. A streak of failed sessions is logged through
   * `log` once when it begins and once when a session's first check succeeds again.
   */
  def resource[F[_]](
      open: Resource[F, Connection],
      worker: WorkerContext,
      gate: IdleGate[F],
      wake: Queue[F, Unit],
      checkEvery: FiniteDuration,
      log: WorkerLog[F]
  )(using F: Async[F]): Resource[F, Unit] =
    import worker.{claims, counters, owner, sql}
    val channel = worker.schema.channel
    val cancelChannel = worker.schema.cancelChannel
    val queue = worker.config.queue
    val poke = wake.tryOffer(()).void

    // every call below blocks this session's own thread, and nothing else: a notification finds the thread
    // awake, and a claim made on it wakes no other thread until its rows are handed on. `started` is
    // completed once this session has tried to take the lock, whether or not it could
    def serve(connection: Connection, started: Deferred[F, Unit], faults: Faults[F]): F[Unit] =
      val pg = connection.unwrap(classOf[PGConnection])
      val here = Run.inPlace[F](connection)
      val slices = (checkEvery / waitSlice).toLong.max(1L).min(Int.MaxValue.toLong)
      def execute(statement: String): F[Int] = F.delay {
        val st = connection.createStatement()
        try
          st.execute(statement)
          st.getUpdateCount
        finally st.close()
      }
      // a successful check proves the connection alive; one that takes the lock also records it, and one that
      // cannot ends the earlier session of this worker that still holds it, for the next check to take it
      def check(locked: Boolean): F[Boolean] =
        if locked then execute("SELECT 1").as(true)
        else
          execute(sql.holdSession(owner)).flatMap { taken =>
            if taken == 1 then F.pure(true) else execute(sql.endEarlierSessions(owner)).as(false)
          }
      // the claimer waits for the rows of every claim begun here: none if it failed. A claim refused because
      // another worker's claim took the same key at once is no fault of the connection: the claimer is woken
      // to claim again, as after its own
      def claimHere(into: Deferred[F, Sql.Claim]): F[Unit] =
        worker.claim.transact(here).attempt.flatMap {
          case Right(claim) => into.complete(claim).void
          case Left(e: SQLException) if e.getSQLState == Claimer.uniqueViolation =>
            into.complete(Sql.Claim.empty) *> poke
          case Left(e) => into.complete(Sql.Claim.empty) *> F.raiseError(e)
        }
      def wakeUp: F[Unit] =
        F.uncancelable(_ => F.delay(gate.sessionClaims()).flatMap(_.fold(poke)(claimHere)))
      // a cancel interrupts its task right here, on this thread: the interruption only completes a callback
      def slice: F[Unit] =
        F.delay {
          var woken = false
          Option(pg.getNotifications(waitSlice.toMillis.toInt)).foreach(_.foreach { n =>
            if n.getName == cancelChannel then
              WorkerSession.cancel(n.getParameter).foreach((token, reason) =>
                claims.interrupt(token, reason): Unit
              )
            else if n.getParameter == queue then woken = true
          })
          woken
        }.flatMap(woken => wakeUp.whenA(woken))
      def rounds(locked: Boolean): F[Unit] =
        slice.replicateA_(slices.toInt) *> check(locked).flatMap(rounds)
      // the session is the worker's own, never a pooled one: its setting stays with it, and like the rest of
      // the worker's bookkeeping its one write (the lock's record) need not wait for the WAL
      execute(s"SET synchronous_commit = off; LISTEN \"$channel\"; LISTEN \"$cancelChannel\"") *> poke *>
        F.guarantee(check(locked = false), started.complete(()).void).flatTap(_ => faults.succeeded)
          .flatMap(rounds)

    def session(wait: FiniteDuration, started: Deferred[F, Unit], faults: Faults[F]): F[Unit] =
      open.use(serve(_, started, faults)).handleErrorWith { e =>
        faults.failed(e) *> started.complete(()) *> poke *> F.sleep(wait) *>
          session((wait * 2).min(5.seconds), started, faults)
      }

    // the resource is ready once the first session has tried to take the worker's lock: a worker killed
    // right after its start is then found by its ended session too, not only after `deadAfter`
    for
      pool <- Resource.make(F.delay(Executors.newSingleThreadExecutor(thread(channel))))(pool =>
        F.delay(pool.shutdown())
      )
      started <- Resource.eval(Deferred[F, Unit])
      faults <- Resource.eval(log.faults("session", "the worker's session (LISTEN, and its lock)", counters))
      _ <- F.background(F.evalOn(session(100.millis, started, faults), ExecutionContext.fromExecutor(pool)))
      _ <- Resource.eval(started.get)
    yield ()

  /** A cancel's payload: the claim's lease token, a space, the reason (see [[Sql]]'s cancel). */
  def cancel(payload: String): Option[(Long, String)] =
    val space = payload.indexOf(' ')
    val token = if space < 0 then payload else payload.substring(0, space)
    token.toLongOption.map(_ -> (if space < 0 then "" else payload.substring(space + 1)))

  private def thread(channel: String): ThreadFactory = runnable =>
    val t = new Thread(runnable, s"weir-session-$channel")
    t.setDaemon(true)
    t
