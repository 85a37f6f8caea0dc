package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import weir.Validation
import weir.postgres.internal.OverviewSql

import scala.concurrent.duration.*

/**
 * What a page of queues shows (the console's overview): every queue's tasks by state and its tasks
 * finished per minute, each read bounded by an index however long the history grows.
 *
 * {{{
 * val overview = QueueOverview(db)
 * overview.counts(cap = 1000).map(_.map(q => q.queue -> q.finished(FinishedState.Dead)))
 * }}}
 *
 * For metrics, [[TaskAdmin.depths]] counts the same live tasks and the finished ones exactly, in one
 * statement, and [[QueueDepths]] shares one count per process among every reader.
 *
 * ==Reading==
 * Each call reads committed rows and writes nothing; concurrent callers are allowed, and each call costs
 * what it says whoever else reads. Cancelling a call cancels its reads.
 *
 * ==Errors==
 * An argument out of range fails the call with [[weir.InvalidSettings]] naming it, before any read; a
 * database error fails it with the driver's `SQLException`.
 */
final class QueueOverview[F[_]] private (db: Database[F])(using F: Async[F]):

  private val sql = new OverviewSql(db.schema)

  /**
   * Every queue with tasks (or `only` that one, if it has any), by name: the live tasks by state, exact,
   * each count one of the claim's partial indexes, and the finished ones per state up to `cap` (1 to
   * 1,000,000), each at most `cap + 1` entries of `finished_by_state`, the queues found by a skip scan of
   * that index rather than a pass over the history. The live and the finished counts are two reads run at
   * once, each on a connection of its own: two snapshots a moment apart, so a task finishing between them
   * may be counted in both or in neither.
   */
  def counts(cap: Int = 1000, only: Option[String] = None): F[Vector[QueueCounts]] =
    Validation.raise("QueueOverview.counts", capErrors(cap)) *>
      F.both(db.run(sql.live(only)), db.run(sql.finishedCapped(cap, only)))
        .map { (live, finished) =>
          val done = finished.groupMap(_._1)(r => r._2 -> r._3).view.mapValues(_.toMap).toMap
          (live.map(_.queue) ++ done.keys).distinct.sorted.map { q =>
            val l = live.find(_.queue == q)
            val f = done.getOrElse(q, Map.empty)
            QueueCounts(
              q,
              available = l.fold(0L)(_.available),
              scheduled = l.fold(0L)(_.scheduled),
              waiting = l.fold(0L)(_.waiting),
              running = l.fold(0L)(_.running),
              finished =
                FinishedState.values.map(s => s -> CappedCount.of(f.getOrElse(s.state, 0L), cap)).toMap,
              oldestAvailable = l.flatMap(_.oldestSeconds).map(s => math.max(0L, (s * 1e9).toLong).nanos)
            )
          }
        }

  /**
   * The tasks of `queue` (or of every queue) that completed and that died in each minute of the last
   * hour, the current one included, oldest first; a minute in which no task finished is left out. One range
   * of `finished_prune`.
   */
  def throughput(queue: Option[String] = None): F[Vector[FinishedPerMinute]] =
    db.run(sql.throughput(queue))

  private def capErrors(cap: Int): List[String] =
    Validation.check(cap > 0 && cap <= 1000000, s"cap must be in 1..1000000, was: $cap")

object QueueOverview:
  def apply[F[_]: Async](db: Database[F]): QueueOverview[F] = new QueueOverview(db)
