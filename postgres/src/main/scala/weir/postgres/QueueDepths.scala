package weir.postgres

import cats.effect.kernel.{Async, Ref, Resource}
import cats.syntax.all.*
import weir.Validation

import java.time.Instant
import scala.concurrent.duration.*

/**
 * A process's one count of its queues' depths: a background loop counts every queue's tasks by state
 * ([[Overview.depths]], one statement) every [[QueueDepths.Settings.every]] and keeps the latest count,
 * which any number of readers (a metrics exporter's gauges, a health check) read for free. So a scrape, or
 * ten of them, costs the database nothing: the database sees one count per period per process.
 *
 * {{{
 * QueueDepths.start(db, QueueDepths.Settings(every = 30.seconds)).use { depths =>
 *   depths.read.map(_.last.map(_.queues))
 * }
 * }}}
 *
 * ==Reading==
 * [[read]] never blocks and never touches the database: it returns the last count that succeeded (none
 * before the first one ends), with when it was taken, and the failed counts since the start. Concurrent
 * readers are allowed.
 *
 * ==Errors==
 * A count that fails (the database away) keeps the last reading, counts the failure and keeps its error;
 * the next period tries again, so the loop never ends on a database error. A reading's `at` tells how old
 * it is.
 *
 * ==Cancellation==
 * Release stops the loop, cancelling a count in progress (a read-only statement: nothing is left behind).
 */
trait QueueDepths[F[_]]:

  /** The last count that succeeded, and the failures so far. */
  def read: F[QueueDepths.State]

object QueueDepths:

  /**
   * How often to count, and which finished states to count (each costs what it keeps: see
   * [[Overview.depths]]). Checked by [[start]].
   *
   * @param every the period between counts, > 0
   * @param finished the finished states counted beside the live ones: by default the dead and cancelled
   *   tasks, which wait for an operator; completed tasks kept by [[WorkerConfig.keepCompleted]] are the
   *   whole history up to the retention, so they are counted only when asked for
   */
  final case class Settings(
      every: FiniteDuration = 15.seconds,
      finished: Set[FinishedState] = Set(FinishedState.Dead, FinishedState.Cancelled)
  )

  /** One count: when it was taken (the database's clock), and every queue with tasks, by name. */
  final case class Reading(at: Instant, queues: Vector[QueueDepth])

  /**
   * What [[QueueDepths.read]] returns: the last reading (none before the first count ended), how many
   * counts failed since the start, and the latest failure.
   */
  final case class State(last: Option[Reading], failures: Long, lastError: Option[Throwable])

  /**
   * Starts counting `db`'s queues, the first count at once, then one every `settings.every`, until the
   * resource is released. Fails with an [[weir.InvalidSettings]] naming the value when `every` is not
   * positive; a count that fails does not fail the resource (see [[QueueDepths]]).
   */
  def start[F[_]](db: Database[F], settings: Settings = Settings())(using
      F: Async[F]
  ): Resource[F, QueueDepths[F]] =
    for
      _ <- Validation.resource(
        "QueueDepths.Settings",
        Validation.check(settings.every > Duration.Zero, s"every must be > 0, was: ${settings.every}")
      )
      state <- Resource.eval(Ref.of[F, State](State(None, 0, None)))
      round = TaskAdmin(db).overview.depthsAt(settings.finished).flatMap(r =>
        state.update(_.copy(last = Some(r)))
      ).handleErrorWith(e =>
        state.update(s => s.copy(failures = s.failures + 1, lastError = Some(e)))
      )
      _ <- F.background((round *> F.sleep(settings.every)).foreverM[Unit])
    yield new QueueDepths[F]:
      def read: F[State] = state.get

/**
 * One queue's tasks by state, as the console names them: `available` (due now and free to claim),
 * `scheduled` (due later: a delayed task, or a failed one waiting for its retry's backoff), `waiting`
 * (behind an earlier task of its ordering key, whatever its due time), `running` (claimed and not
 * finished), and the finished states counted (`finished` holds a count for each state asked for, 0
 * included, and none for the others). `oldestAvailable` is how long the oldest available task has been
 * due.
 */
final case class QueueDepth(
    queue: String,
    available: Long,
    scheduled: Long,
    waiting: Long,
    running: Long,
    finished: Map[FinishedState, Long],
    oldestAvailable: Option[FiniteDuration]
)

object QueueDepth:

  /** The statement's parts (one row per index read and queue), added up per queue, queues by name. */
  private[postgres] def sum(
      rows: Vector[(String, Long, Long, Long, Long, Long, Long, Long, Option[Double])],
      counted: Set[FinishedState]
  ): Vector[QueueDepth] =
    rows.groupBy(_._1).toVector.sortBy(_._1).map { (queue, rs) =>
      def total(f: ((String, Long, Long, Long, Long, Long, Long, Long, Option[Double])) => Long) =
        rs.map(f).sum
      val done = Map(
        FinishedState.Completed -> total(_._6),
        FinishedState.Dead -> total(_._7),
        FinishedState.Cancelled -> total(_._8)
      )
      QueueDepth(
        queue,
        available = total(_._2),
        scheduled = total(_._3),
        waiting = total(_._4),
        running = total(_._5),
        finished = done.filter((s, _) => counted(s)),
        oldestAvailable = rs.flatMap(_._9).maxOption.map(s => math.max(0L, (s * 1e9).toLong).nanos)
      )
    }
