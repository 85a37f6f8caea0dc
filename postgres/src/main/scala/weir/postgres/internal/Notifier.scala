package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import org.postgresql.PGConnection

import java.sql.Connection
import scala.concurrent.duration.*

/**
 * Owns the worker's LISTEN connection: a notification naming the worker's queue wakes its claimer. The
 * connection is outside the pool and is checked with a query every `checkEvery`, so a connection that died
 * without a word (a restarted server, a dropped TCP session) is found and opened again; each new
 * connection also wakes the claimer once, for whatever was enqueued while no one listened. Until it is
 * back the claimer still polls, so a lost LISTEN delays tasks by at most the poll interval and loses none.
 */
private[postgres] object Notifier:

  /** How often the LISTEN connection is checked with a query. */
  val checkEvery: FiniteDuration = 5.seconds

  /** How long one wait for notifications blocks its thread (and so how long a release may wait for it). */
  val waitSlice: FiniteDuration = 250.millis

  def resource[F[_]](
      open: Resource[F, Connection],
      channel: String,
      queue: String,
      wake: Queue[F, Unit],
      checkEvery: FiniteDuration,
      counters: Counters
  )(using F: Async[F]): Resource[F, Unit] =
    val poke = wake.tryOffer(()).void

    def listen(connection: Connection): F[Unit] =
      val pg = connection.unwrap(classOf[PGConnection])
      val slices = (checkEvery / waitSlice).toLong.max(1L).min(Int.MaxValue.toLong)
      def check: F[Unit] = F.blocking {
        val st = connection.createStatement()
        try st.execute("SELECT 1"): Unit
        finally st.close()
      }
      def slice: F[Unit] =
        F.blocking(Option(pg.getNotifications(waitSlice.toMillis.toInt)).exists(_.exists(_.getParameter ==
          queue)))
          .flatMap(woken => poke.whenA(woken))
      def round: F[Unit] = slice.replicateA_(slices.toInt) *> check
      F.blocking {
        val st = connection.createStatement()
        try st.execute("LISTEN \"" + channel + "\""): Unit
        finally st.close()
      } *> poke *> round.foreverM[Unit]

    def session(wait: FiniteDuration): F[Unit] =
      open.use(listen).handleErrorWith { e =>
        F.delay(counters.error(e)) *> poke *> F.sleep(wait) *> session((wait * 2).min(5.seconds))
      }

    F.background(session(100.millis)).void
