package weir.postgres.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import org.typelevel.log4cats.{LoggerFactory, SelfAwareStructuredLogger}
import weir.{Service, Streak}

/**
 * Where a worker's parts log, through the user's `LoggerFactory`: one logger per part, named
 * `weir.postgres.worker.<part>`, each line starting with the queue and the worker's id, which its context
 * also carries (`weir.queue`, `weir.worker`). Nothing here is logged per task at INFO.
 */
private[postgres] final class WorkerLog[F[_]](factory: LoggerFactory[F], queue: String, owner: Long)(using
    F: Async[F]
):

  /** The context of every line: the queue and the worker. */
  val context: Map[String, String] = Map("weir.queue" -> queue, "weir.worker" -> owner.toString)

  /** How every line begins. */
  val prefix: String = s"queue '$queue', worker $owner"

  /** The logger of `part`. */
  def logger(part: String): SelfAwareStructuredLogger[F] =
    factory.getLoggerFromName(s"${WorkerLog.root}.$part")

  /**
   * The faults of `part` (`what` names it in the lines: "the heartbeat"): each error counted in the
   * worker's stats, a streak of them logged once when it begins (WARN, with the first error) and once when
   * it ends (INFO, with its count and length).
   */
  def faults(part: String, what: String, counters: Counters): F[Faults[F]] =
    faults(part, what, counters.error)

  /** [[faults]] counted by `count` rather than in the worker's stats. */
  def faults(part: String, what: String, count: Throwable => Unit): F[Faults[F]] =
    val log = logger(part)
    Streak[F](
      began = e =>
        log.warn(context, e)(
          s"$prefix: $what failed (retried; logged again once it succeeds): ${Errors.describe(e)}"
        ),
      ended = end =>
        log.info(context)(
          s"$prefix: $what succeeded again after ${end.errors} database error(s) over ${end.lasted.toMillis} ms"
        )
    ).map(new Faults(count, _))

private[postgres] object WorkerLog:

  /** The parent of every worker logger. */
  val root: String = "weir.postgres.worker"

/**
 * The database errors one part of weir-postgres rides out: each counted by `count` (in a worker's
 * [[weir.postgres.WorkerStats]], `databaseErrors` and `lastError`; in a scheduler's stats), and logged once
 * per streak (see [[WorkerLog.faults]]). A part reports every round that succeeded too, which ends its
 * streak, if one is under way. The faults of a part that is a [[weir.Service]].
 */
private[postgres] final class Faults[F[_]](count: Throwable => Unit, streak: Streak[F])(using F: Async[F])
    extends Service.Faults[F]:

  /** Counts `e`, and logs it if it begins a streak. */
  def failed(e: Throwable): F[Unit] = F.delay(count(e)) *> streak.failed(e)

  /** Ends the streak under way, logging its count, if one is. */
  def succeeded: F[Unit] = streak.succeeded
