package weir.otel

import weir.{Disposition, DurationHistogram, Snapshot}

import scala.concurrent.duration.FiniteDuration

/**
 * The counters one series reports, summed over runs: those of the runs that ended, kept when they end,
 * plus those of the runs going on, read at each collection. Every field only grows from one collection
 * to the next, as OpenTelemetry's cumulative counters must.
 */
private[otel] final case class Counts(
    received: Long,
    started: Long,
    succeeded: Long,
    notStarted: Long,
    dispositions: Map[Disposition, Long],
    retries: Long,
    timeouts: Long,
    rateLimited: Long,
    wakeUps: Long
):
  def +(other: Counts): Counts =
    Counts(
      received = received + other.received,
      started = started + other.started,
      succeeded = succeeded + other.succeeded,
      notStarted = notStarted + other.notStarted,
      dispositions = Disposition.values.iterator
        .map(d => d -> (dispositions.getOrElse(d, 0L) + other.dispositions.getOrElse(d, 0L)))
        .toMap,
      retries = retries + other.retries,
      timeouts = timeouts + other.timeouts,
      rateLimited = rateLimited + other.rateLimited,
      wakeUps = wakeUps + other.wakeUps
    )

private[otel] object Counts:
  val zero: Counts =
    Counts(
      received = 0,
      started = 0,
      succeeded = 0,
      notStarted = 0,
      dispositions = Map.empty,
      retries = 0,
      timeouts = 0,
      rateLimited = 0,
      wakeUps = 0
    )

  def of(s: Snapshot): Counts =
    Counts(
      received = s.received,
      started = s.started,
      succeeded = s.succeeded,
      notStarted = s.notStarted,
      dispositions = s.dispositions,
      retries = s.retries,
      timeouts = s.timeouts,
      rateLimited = s.rateLimited,
      wakeUps = s.wakeUps
    )

/** The gauges of one series: the sum over its runs going on (zero when none is). */
private[otel] final case class Gauges(inFlight: Long, buffered: Long, limit: Long, workers: Long):
  def +(other: Gauges): Gauges =
    Gauges(
      inFlight = inFlight + other.inFlight,
      buffered = buffered + other.buffered,
      limit = limit + other.limit,
      workers = workers + other.workers
    )

private[otel] object Gauges:
  val zero: Gauges = Gauges(inFlight = 0, buffered = 0, limit = 0, workers = 0)

  def of(s: Snapshot): Gauges =
    Gauges(inFlight = s.inFlight, buffered = s.buffered, limit = s.limit.toLong, workers = s.workers.toLong)

/**
 * A latency histogram in the explicit buckets a [[WeirMetrics]] exports (`counts` has one more entry than
 * the bounds), summed over runs like [[Counts]].
 */
private[otel] final case class Buckets(counts: Vector[Long], count: Long, sumNanos: Long, maxNanos: Long):
  def +(other: Buckets): Buckets =
    Buckets(
      counts = counts.lazyZip(other.counts).map(_ + _),
      count = count + other.count,
      sumNanos = sumNanos + other.sumNanos,
      maxNanos = math.max(maxNanos, other.maxNanos)
    )

private[otel] object Buckets:
  def zero(bounds: Vector[FiniteDuration]): Buckets =
    Buckets(counts = Vector.fill(bounds.size + 1)(0L), count = 0, sumNanos = 0, maxNanos = 0)

  /** The sum of `all`, or `None` when there is none. */
  def sum(all: Iterable[Buckets]): Option[Buckets] = all.reduceOption(_ + _)

  /** The count is the buckets' sum, so that it agrees with them even when read while tasks finish. */
  def of(h: DurationHistogram, bounds: Vector[FiniteDuration]): Buckets =
    val counts = h.bucketCounts(bounds)
    Buckets(counts = counts, count = counts.sum, sumNanos = h.sum.toNanos, maxNanos = h.max.toNanos)
