package weir.lab.requests

import cats.effect.IO
import org.HdrHistogram.{Histogram, Recorder as HdrRecorder}

import java.util.concurrent.atomic.AtomicLong

/**
 * The client side's counters for one run: requests in flight (and the peak), completed, succeeded,
 * failed, every request's latency in an HdrHistogram (microseconds, 3 significant digits), how long the
 * client took to first have `concurrency` requests in flight (the ramp-up the ideal schedule does not
 * pay), and each successful request's **overhead**: its latency minus the delay the server was asked to
 * wait (`delayMs(id)`, known in advance), i.e. what the client, the server and the network added.
 * Lock-free: a request costs a few atomic increments and two wait-free histogram records, nothing kept
 * per request.
 */
final class Recorder(concurrency: Int, delayMs: Long => Long):
  private val inFlightNow = new AtomicLong
  private val peak = new AtomicLong
  private val ok = new AtomicLong
  private val ko = new AtomicLong
  private val latencies = new HdrRecorder(3)
  private val overheads = new HdrRecorder(3)
  private val firstStart = new AtomicLong(Recorder.NotYet)
  @volatile private var filledAfterNanos = Recorder.NotYet
  @volatile private var firstError: Option[String] = None

  /**
   * Runs request `id`, counted in flight while it runs; its error (if any) is recorded, never raised.
   */
  def call(id: Long, request: IO[Long]): IO[Unit] =
    IO.uncancelable(poll =>
      IO(enter()).flatMap(t0 =>
        poll(
          request
        ).attempt.flatMap(r => IO(leave(id, t0, r.isRight, r.left.toOption))).onCancel(IO(cancelled()))
      )
    )

  /** The blocking form of [[call]], for code that runs outside any effect (a blocking approach's thread). */
  def callBlocking(id: Long, request: => Long): Unit =
    val t0 = enter()
    val r =
      try Right(request)
      catch case e: Exception => Left(e)
    leave(id, t0, r.isRight, r.left.toOption)

  private def enter(): Long =
    val t0 = System.nanoTime()
    // a plain read first: only the first requests pay a compare-and-set
    if firstStart.get == Recorder.NotYet then firstStart.compareAndSet(Recorder.NotYet, t0): Unit
    val now = inFlightNow.incrementAndGet()
    val _ = peak.accumulateAndGet(now, (a, b) => math.max(a, b))
    // the first time the client has as many requests in flight as it may (`parallel` never does); two
    // requests reaching it at nearly the same instant may both write: either time is the fill
    if now == concurrency && filledAfterNanos == Recorder.NotYet then filledAfterNanos = t0 - firstStart.get
    t0

  private def leave(id: Long, t0: Long, success: Boolean, error: Option[Throwable]): Unit =
    val micros = math.max(0L, (System.nanoTime() - t0) / 1000)
    latencies.recordValue(micros)
    if success then
      overheads.recordValue(math.max(0L, micros - delayMs(id) * 1000))
      val _ = ok.incrementAndGet()
    else
      if firstError.isEmpty then firstError = error.map(_.toString)
      val _ = ko.incrementAndGet()
    val _ = inFlightNow.decrementAndGet()

  private def cancelled(): Unit =
    val _ = inFlightNow.decrementAndGet()

  def inFlight: Long = inFlightNow.get
  def peakInFlight: Long = peak.get
  def succeeded: Long = ok.get
  def failed: Long = ko.get
  def completed: Long = ok.get + ko.get
  def error: Option[String] = firstError

  /** Every latency recorded so far (call once, at the end of the run). */
  def histogram: Histogram = latencies.getIntervalHistogram

  /** Every successful request's latency minus its delay (µs; call once, at the end of the run). */
  def overheadHistogram: Histogram = overheads.getIntervalHistogram

  /** Milliseconds from the first request to the first moment `concurrency` were in flight; NaN if never. */
  def fillMs: Double =
    val ns = filledAfterNanos
    if ns == Recorder.NotYet then Double.NaN else ns / 1e6

object Recorder:
  private val NotYet = Long.MinValue
