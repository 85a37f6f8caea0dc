package weir.otel

import weir.Running

import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

/** What names a series: the pipeline, and the durable queue it works on if any. */
private[otel] final case class SeriesKey(pipeline: String, queue: Option[String])

/**
 * One series: the runs going on under its key, and what the runs that ended left. `startEpochNanos` is
 * when the series began, the start of its cumulative counts; `endedQueueWaits` is empty until a run that
 * measured queue waits ([[weir.Pipeline.withQueueWaits]]) ended.
 */
private[otel] final case class Series[F[_]](
    startEpochNanos: Long,
    live: Map[Long, Running[F, ?]],
    endedCounts: Counts,
    endedLatencies: Buckets,
    endedQueueWaits: Option[Buckets]
)

/**
 * The series a [[WeirMetrics]] reports. A run is attached when it starts and retired once it has ended,
 * its last counts then added to the series' ended totals in the same atomic step that removes it, so that
 * a collection sees each run either live or ended, never both nor neither. A series stays when its runs
 * have ended (a cumulative counter must not go back), so the registry holds one small entry per name used.
 */
private[otel] final class Registry[F[_]]:
  private val state = new AtomicReference(Map.empty[SeriesKey, Series[F]])
  private val ids = new AtomicLong

  def series: Map[SeriesKey, Series[F]] = state.get

  /** Adds a running run under `key`; returns its id, for [[retire]]. */
  def attach(key: SeriesKey, running: Running[F, ?], nowEpochNanos: Long, emptyBuckets: Buckets): Long =
    val id = ids.incrementAndGet()
    val _ = state.updateAndGet { m =>
      val s = m.getOrElse(key, Series[F](nowEpochNanos, Map.empty, Counts.zero, emptyBuckets, None))
      m.updated(key, s.copy(live = s.live.updated(id, running)))
    }
    id

  /** Replaces the run `id` of `key` with what it counted in the end. */
  def retire(key: SeriesKey, id: Long, last: Counts, latencies: Buckets, queueWaits: Option[Buckets]): Unit =
    val _ = state.updateAndGet { m =>
      m.get(key) match
        case Some(s) if s.live.contains(id) =>
          m.updated(
            key,
            s.copy(
              live = s.live - id,
              endedCounts = s.endedCounts + last,
              endedLatencies = s.endedLatencies + latencies,
              endedQueueWaits = Buckets.sum(s.endedQueueWaits.toList ++ queueWaits)
            )
          )
        case _ => m
    }
