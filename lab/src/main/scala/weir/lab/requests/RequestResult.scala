package weir.lab.requests

import io.circe.{ACursor, Decoder, HCursor, Json}
import io.circe.syntax.*

/** Requests in flight and completed at `tMs` ms after the start of a run. */
final case class Sample(tMs: Long, inFlight: Long, completed: Long)

/**
 * One approach's run.
 *
 * @param status           `ok`, `timed out`, `out of memory` or `failed`
 * @param makespanMs       from the first request sent to the last answer (or to the time limit)
 * @param idealMs          the ideal schedule's makespan ([[RequestIdeal]])
 * @param littlePerSecond  Little's-law bound, `concurrency / mean delay`, in requests per second
 * @param serverServed     requests the server answered during the run
 * @param serverPeakInFlight the server's own peak of requests in flight during the run
 * @param peakHeapMiB      the client JVM's peak heap used (garbage included)
 * @param peakAfterGcMiB   the client JVM's largest heap left after a collection (reachable memory)
 * @param heapCapMiB       the client JVM's maximum heap
 * @param fillMs           from the first request to the first moment `concurrency` were in flight (NaN: never)
 * @param overheadMeanMs   successful requests' latency minus their delay, mean (also p50, p99): what client,
 *                         server and network added to each request; a slot runs about `n / concurrency`
 *                         requests in a row, so the makespan grows by about that many times the mean
 */
final case class RequestResult(
    approach: String,
    status: String,
    detail: Option[String],
    n: Long,
    concurrency: Int,
    succeeded: Long,
    failed: Long,
    makespanMs: Double,
    idealMs: Double,
    littlePerSecond: Double,
    clientPeakInFlight: Long,
    serverPeakInFlight: Long,
    serverServed: Long,
    peakHeapMiB: Long,
    peakAfterGcMiB: Long,
    heapCapMiB: Long,
    peakThreads: Int,
    cpuMs: Long,
    serverCpuMs: Long,
    p50Ms: Double,
    p99Ms: Double,
    maxMs: Double,
    fillMs: Double,
    overheadMeanMs: Double,
    overheadP50Ms: Double,
    overheadP99Ms: Double,
    samples: Vector[Sample]
):
  def completed: Long = succeeded + failed

  /**
   * One line: status, makespan, successes and failures, peaks in flight, and the first error if any (its
   * first 200 characters: an HTTP client's exception can describe its whole connection).
   */
  def brief: String =
    f"$status, ${makespanMs / 1000}%.3f s, $succeeded%,d ok, $failed%,d failed, in flight " +
      f"$clientPeakInFlight%d client / $serverPeakInFlight%d server" +
      detail.fold("")(d => s" (${if d.length > 200 then d.take(200) + "…" else d})")

  def ratio: Double = if status == "ok" && idealMs > 0 then makespanMs / idealMs else Double.NaN
  def perSecond: Double = if makespanMs > 0 then completed * 1000.0 / makespanMs else Double.NaN
  def littleShare: Double = perSecond / littlePerSecond

  def toJson: Json = Json.obj(
    "approach" -> approach.asJson,
    "status" -> status.asJson,
    "detail" -> detail.asJson,
    "n" -> n.asJson,
    "concurrency" -> concurrency.asJson,
    "succeeded" -> succeeded.asJson,
    "failed" -> failed.asJson,
    "makespan_ms" -> RequestResult.number(makespanMs),
    "ideal_ms" -> RequestResult.number(idealMs),
    "ratio" -> RequestResult.number(ratio),
    "requests_per_s" -> RequestResult.number(perSecond),
    "little_bound_per_s" -> RequestResult.number(littlePerSecond),
    "little_share" -> RequestResult.number(littleShare),
    "client_peak_in_flight" -> clientPeakInFlight.asJson,
    "server_peak_in_flight" -> serverPeakInFlight.asJson,
    "server_served" -> serverServed.asJson,
    "peak_heap_mib" -> peakHeapMiB.asJson,
    "peak_heap_after_gc_mib" -> peakAfterGcMiB.asJson,
    "heap_cap_mib" -> heapCapMiB.asJson,
    "peak_threads" -> peakThreads.asJson,
    "cpu_ms" -> cpuMs.asJson,
    "server_cpu_ms" -> serverCpuMs.asJson,
    "latency_ms" -> Json.obj(
      "p50" -> RequestResult.number(p50Ms),
      "p99" -> RequestResult.number(p99Ms),
      "max" -> RequestResult.number(maxMs)
    ),
    "fill_ms" -> RequestResult.number(fillMs),
    "overhead_ms" -> Json.obj(
      "mean" -> RequestResult.number(overheadMeanMs),
      "p50" -> RequestResult.number(overheadP50Ms),
      "p99" -> RequestResult.number(overheadP99Ms)
    ),
    "samples" -> Json.obj(
      "t_ms" -> samples.map(_.tMs).asJson,
      "in_flight" -> samples.map(_.inFlight).asJson,
      "completed" -> samples.map(_.completed).asJson
    )
  )

object RequestResult:
  private def number(d: Double): Json =
    if d.isNaN || d.isInfinite then Json.Null else Json.fromDoubleOrNull(d)

  private def double(c: ACursor, field: String): Decoder.Result[Double] =
    c.get[Option[Double]](field).map(_.getOrElse(Double.NaN))

  /** Reads back what [[RequestResult.toJson]] wrote (the child JVM's result file). */
  given Decoder[RequestResult] = (c: HCursor) =>
    val lat = c.downField("latency_ms")
    val smp = c.downField("samples")
    val over = c.downField("overhead_ms")
    for
      approach <- c.get[String]("approach")
      status <- c.get[String]("status")
      detail <- c.get[Option[String]]("detail")
      n <- c.get[Long]("n")
      concurrency <- c.get[Int]("concurrency")
      succeeded <- c.get[Long]("succeeded")
      failed <- c.get[Long]("failed")
      makespan <- double(c, "makespan_ms")
      ideal <- double(c, "ideal_ms")
      little <- double(c, "little_bound_per_s")
      clientPeak <- c.get[Long]("client_peak_in_flight")
      serverPeak <- c.get[Long]("server_peak_in_flight")
      served <- c.get[Long]("server_served")
      heap <- c.get[Long]("peak_heap_mib")
      afterGc <- c.get[Long]("peak_heap_after_gc_mib")
      cap <- c.get[Long]("heap_cap_mib")
      threads <- c.get[Int]("peak_threads")
      cpu <- c.get[Long]("cpu_ms")
      serverCpu <- c.get[Long]("server_cpu_ms")
      p50 <- lat.get[Option[Double]]("p50")
      p99 <- lat.get[Option[Double]]("p99")
      max <- lat.get[Option[Double]]("max")
      fill <- double(c, "fill_ms")
      overMean <- double(over, "mean")
      overP50 <- double(over, "p50")
      overP99 <- double(over, "p99")
      ts <- smp.get[Vector[Long]]("t_ms")
      inFlight <- smp.get[Vector[Long]]("in_flight")
      completed <- smp.get[Vector[Long]]("completed")
    yield RequestResult(
      approach,
      status,
      detail,
      n,
      concurrency,
      succeeded,
      failed,
      makespan,
      ideal,
      little,
      clientPeak,
      serverPeak,
      served,
      heap,
      afterGc,
      cap,
      threads,
      cpu,
      serverCpu,
      p50.getOrElse(Double.NaN),
      p99.getOrElse(Double.NaN),
      max.getOrElse(Double.NaN),
      fill,
      overMean,
      overP50,
      overP99,
      ts.lazyZip(inFlight).lazyZip(completed).map(Sample.apply)
    )
