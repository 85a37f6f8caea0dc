package weir.lab.requests

import cats.effect.IO
import org.HdrHistogram.{Histogram, Recorder as HdrRecorder}

import java.util.concurrent.atomic.AtomicLong

/**
 * The client side's counters for one run: requests in flight (and the peak), completed, succeeded,
 * failed, and every request's latency in an HdrHistogram (microseconds, 3 significant digits). Lock-free:
 * a request costs a few atomic increments and one wait-free histogram record, nothing kept per request.
 */
final class Recorder:
  private val inFlightNow = new AtomicLong
  private val peak = new AtomicLong
  private val ok = new AtomicLong
  private val ko = new AtomicLong
  private val latencies = new HdrRecorder(3)
  @volatile private var firstError: Option[String] = None

  /** Runs one request, counted in flight while it runs; its error (if any) is recorded, never raised. */
  def call(request: IO[Long]): IO[Unit] =
    IO.uncancelable(poll =>
      IO(enter()).flatMap(t0 =>
        poll(
          request
        ).attempt.flatMap(r => IO(leave(t0, r.isRight, r.left.toOption))).onCancel(IO(cancelled()))
      )
    )

  /** The blocking form of [[call]], for code that runs outside any effect (a blocking approach's thread). */
  def callBlocking(request: => Long): Unit =
    val t0 = enter()
    val r =
      try Right(request)
      catch case e: Exception => Left(e)
    leave(t0, r.isRight, r.left.toOption)

  private def enter(): Long =
    val now = inFlightNow.incrementAndGet()
    val _ = peak.accumulateAndGet(now, (a, b) => math.max(a, b))
    System.nanoTime()

  private def leave(t0: Long, success: Boolean, error: Option[Throwable]): Unit =
    latencies.recordValue(math.max(0L, (System.nanoTime() - t0) / 1000))
    if success then
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
