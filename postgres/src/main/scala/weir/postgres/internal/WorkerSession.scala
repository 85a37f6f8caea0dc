package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import org.postgresql.PGConnection

import java.sql.Connection
import scala.concurrent.duration.*

/**
 * Owns the worker's own session, a connection outside the pool that does two things. It listens: a
 * notification naming the worker's queue wakes its claimer. And it holds the worker's session lock (see
 * [[Sql.holdSession]]), which the server frees when the process dies, so that other workers rescue its
 * tasks within a heartbeat instead of after `deadAfter`.
 *
 * The connection is checked with a query every `checkEvery`, so one that died without a word (a restarted
 * server, a dropped TCP session) is found and opened again; each new connection also wakes the claimer
 * once, for whatever was enqueued while no one listened, and takes the lock again. A lock still held by a
 * previous session of this worker that the server has not ended (its connection went silent rather than
 * closed) cannot be taken: the check ends that session and takes the lock at the next check; meanwhile the
 * old session's lock says the same thing. Until the connection is back the
 * claimer still polls, so a lost session delays tasks by at most the poll interval and loses none; the
 * worker's heartbeat, on its pool, keeps it from being taken for dead.
 */
private[postgres] object WorkerSession:

  /** How often the session is checked with a query. */
  val checkEvery: FiniteDuration = 5.seconds

  /** How long one wait for notifications blocks its thread (and so how long a release may wait for it). */
  val waitSlice: FiniteDuration = 250.millis

  def resource[F[_]](
      open: Resource[F, Connection],
      sql: Sql,
      owner: Long,
      channel: String,
      queue: String,
      wake: Queue[F, Unit],
      checkEvery: FiniteDuration,
      counters: Counters
  )(using F: Async[F]): Resource[F, Unit] =
    val poke = wake.tryOffer(()).void

    def serve(connection: Connection): F[Unit] =
      val pg = connection.unwrap(classOf[PGConnection])
      val slices = (checkEvery / waitSlice).toLong.max(1L).min(Int.MaxValue.toLong)
      def execute(statement: String): F[Int] = F.blocking {
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
      def slice: F[Unit] =
        F.blocking(Option(pg.getNotifications(waitSlice.toMillis.toInt)).exists(_.exists(_.getParameter ==
          queue)))
          .flatMap(woken => poke.whenA(woken))
      def rounds(locked: Boolean): F[Unit] =
        slice.replicateA_(slices.toInt) *> check(locked).flatMap(rounds)
      // the session is the worker's own, never a pooled one: its setting stays with it, and like the rest of
      // the worker's bookkeeping its one write (the lock's record) need not wait for the WAL
      execute("SET synchronous_commit = off; LISTEN \"" + channel + "\"") *> poke *>
        check(locked = false).flatMap(rounds)

    def session(wait: FiniteDuration): F[Unit] =
      open.use(serve).handleErrorWith { e =>
        F.delay(counters.error(e)) *> poke *> F.sleep(wait) *> session((wait * 2).min(5.seconds))
      }

    F.background(session(100.millis)).void
