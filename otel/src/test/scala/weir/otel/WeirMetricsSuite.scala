package weir.otel

import cats.effect.{IO, Resource}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import fs2.Stream
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.sdk.OpenTelemetrySdk
import io.opentelemetry.sdk.metrics.SdkMeterProvider
import io.opentelemetry.sdk.metrics.data.{HistogramPointData, LongPointData, MetricData, MetricDataType}
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader
import munit.CatsEffectSuite
import org.typelevel.otel4s.oteljava.OtelJava
import weir.*

import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

class WeirMetricsSuite extends CatsEffectSuite:

  /** weir's metrics on an OpenTelemetry Java SDK read back by an in-memory reader. */
  private final case class Setup(metrics: WeirMetrics[IO], reader: InMemoryMetricReader):
    /** Collects now (the SDK's readers collect on threads that may block: so does this). */
    def collect: IO[Vector[MetricData]] = IO.blocking(reader.collectAllMetrics().asScala.toVector)

  /** With the histogram: weir's own SDK ([[WeirMetrics.onSdk]]); without: an SDK with no producer. */
  private def setup(
      latencies: Boolean = true,
      bounds: Vector[FiniteDuration] = WeirMetrics.DefaultLatencyBounds
  ): Resource[IO, Setup] =
    val reader = InMemoryMetricReader.create()
    if latencies then WeirMetrics.onSdk[IO](reader, bounds).map(Setup(_, reader))
    else
      for
        sdk <- Resource.make(
          IO(
            OpenTelemetrySdk
              .builder()
              .setMeterProvider(SdkMeterProvider.builder().registerMetricReader(reader).build())
              .build()
          )
        )(s => IO.blocking(s.close()))
        otel <- Resource.eval(OtelJava.fromJOpenTelemetry[IO](sdk))
        meter <- Resource.eval(otel.meterProvider.get("weir-test"))
        metrics <- WeirMetrics.register(meter, None, bounds)
      yield Setup(metrics, reader)

  private val pipelineKey = AttributeKey.stringKey(MetricNames.PipelineName)
  private val outcomeKey = AttributeKey.stringKey(MetricNames.Outcome)

  private def metric(ms: Vector[MetricData], name: String): MetricData =
    ms.find(_.getName == name).getOrElse(fail(s"no metric $name in ${ms.map(_.getName).mkString(", ")}"))

  /** The long points of `name`, by (pipeline, outcome) attribute values (outcome empty when absent). */
  private def longs(ms: Vector[MetricData], name: String): Map[(String, String), Long] =
    val m = metric(ms, name)
    val points: Iterable[LongPointData] =
      if m.getType == MetricDataType.LONG_GAUGE then m.getLongGaugeData.getPoints.asScala
      else m.getLongSumData.getPoints.asScala
    points.map { p =>
      (p.getAttributes.get(pipelineKey), Option(p.getAttributes.get(outcomeKey)).getOrElse("")) -> p.getValue
    }.toMap

  private def histogram(ms: Vector[MetricData], pipeline: String): HistogramPointData =
    metric(ms, MetricNames.Duration).getHistogramData.getPoints.asScala
      .find(_.getAttributes.get(pipelineKey) == pipeline)
      .getOrElse(fail(s"no latency histogram for $pipeline"))

  /**
   * 20 tasks; task i sleeps i ms and then fails on its first attempt if i % 4 == 0, on both if i % 10 == 0
   * (2 attempts, no backoff): every attempt's sleep counts in the task's latency, exactly in virtual time.
   */
  private def knownRun(metrics: WeirMetrics[IO], name: String): IO[Summary[Int]] =
    IO.ref(Set.empty[Int]).flatMap { failedOnce =>
      val pipeline = Pipeline(Stream.range(1, 21).covary[IO])
        .process { i =>
          IO.sleep(i.millis) *> failedOnce.modify(s => (s + i, s(i))).flatMap { again =>
            IO.raiseError(new RuntimeException(s"task $i")).whenA(i % 10 == 0 || (i % 4 == 0 && !again))
          }
        }
        .withLimit(Limit.fixed(3))
        .withRetry(Retry.exponential(Duration.Zero, maxAttempts = 2, jitter = Retry.Jitter.Off))
        .withFailurePolicy(FailurePolicy.deadLetter[IO, Int]((_, _) => IO.unit))
      metrics.run(pipeline, name)
    }

  // tasks 4, 8, 12, 16 fail once; 10 and 20 fail twice (dead-lettered): 6 retries, 18 succeed
  private val retried = Set(4, 8, 10, 12, 16, 20)
  private val latencyMillis = (1 to 20).map(i => if retried(i) then 2 * i else i)

  test("a known run: exact counts by outcome, and the latency histogram's count, sum and buckets") {
    setup().use { s =>
      for
        summary <- TestControl.executeEmbed(knownRun(s.metrics, "known"))
        ms <- s.collect
      yield
        assertEquals(summary.succeeded, 18L)
        assertEquals(longs(ms, MetricNames.Received), Map(("known", "") -> 20L))
        assertEquals(longs(ms, MetricNames.Started), Map(("known", "") -> 20L))
        assertEquals(longs(ms, MetricNames.Retries), Map(("known", "") -> 6L))
        assertEquals(longs(ms, MetricNames.Timeouts), Map(("known", "") -> 0L))
        assertEquals(longs(ms, MetricNames.RateLimited), Map(("known", "") -> 0L))
        assertEquals(
          longs(ms, MetricNames.Finished),
          Map(
            ("known", "succeeded") -> 18L,
            ("known", "dead_lettered") -> 2L,
            ("known", "not_started") -> 0L,
            ("known", "skipped") -> 0L,
            ("known", "dead_letter_failed") -> 0L,
            ("known", "aborted") -> 0L,
            ("known", "interrupted") -> 0L
          )
        )
        // the run has ended: nothing in flight, buffered, or running
        assertEquals(longs(ms, MetricNames.InFlight), Map(("known", "") -> 0L))
        assertEquals(longs(ms, MetricNames.Buffered), Map(("known", "") -> 0L))
        assertEquals(longs(ms, MetricNames.Limit), Map(("known", "") -> 0L))
        assertEquals(longs(ms, MetricNames.Workers), Map(("known", "") -> 0L))
        val h = histogram(ms, "known")
        assertEquals(h.getCount, 20L)
        assertEqualsDouble(h.getSum, latencyMillis.sum / 1000.0, 1e-9)
        assertEqualsDouble(h.getMax, 40 / 1000.0, 1e-12)
        assertEquals(metric(ms, MetricNames.Duration).getUnit, "s")
        val bounds = WeirMetrics.DefaultLatencyBounds
        val expected = (bounds.map(_.toMillis.toDouble) :+ Double.PositiveInfinity).zipWithIndex.map {
          (upper, i) =>
            val lower = if i == 0 then -1.0 else bounds(i - 1).toMillis.toDouble
            latencyMillis.count(l => l > lower && l <= upper).toLong
        }
        assertEquals(h.getCounts.asScala.map(_.longValue).toVector, expected)
        assertEquals(h.getBoundaries.asScala.map(_.doubleValue).toVector, bounds.map(_.toNanos / 1e9))
    }
  }

  test("runs under one name add up, and a collection between them never sees a counter go back") {
    setup().use { s =>
      for
        _ <- TestControl.executeEmbed(knownRun(s.metrics, "twice"))
        first <- s.collect
        _ <- TestControl.executeEmbed(knownRun(s.metrics, "twice"))
        _ <- TestControl.executeEmbed(knownRun(s.metrics, "other"))
        second <- s.collect
      yield
        assertEquals(longs(first, MetricNames.Received), Map(("twice", "") -> 20L))
        assertEquals(longs(second, MetricNames.Received), Map(("twice", "") -> 40L, ("other", "") -> 20L))
        assertEquals(longs(second, MetricNames.Finished)(("twice", "dead_lettered")), 4L)
        assertEquals(histogram(second, "twice").getCount, 40L)
        assertEqualsDouble(histogram(second, "twice").getSum, 2 * latencyMillis.sum / 1000.0, 1e-9)
        assertEquals(histogram(second, "other").getCount, 20L)
    }
  }

  test(
    "a run going on: its gauges, then a drain's interrupted and not-started tasks, every task counted once"
  ) {
    setup().use { s =>
      val held = Pipeline(Stream.range(
        0,
        100
      ).covary[IO]).process(_ => IO.never[Unit]).withLimit(Limit.fixed(3)).withBuffer(5)
      s.metrics.instrument(held.start, "held", queue = Some("q1")).use { running =>
        for
          _ <- (IO.sleep(5.millis) *> running.snapshot).iterateUntil(sn =>
            sn.inFlight == 3 && sn.buffered >= 4
          )
          during <- s.collect
          summary <- running.drain(Duration.Zero)
        yield (during, summary)
      }.flatMap { (during, summary) =>
        s.collect.map { after =>
          assertEquals(longs(during, MetricNames.InFlight), Map(("held", "") -> 3L))
          assertEquals(longs(during, MetricNames.Limit), Map(("held", "") -> 3L))
          assertEquals(longs(during, MetricNames.Workers), Map(("held", "") -> 3L))
          assert(Set(4L, 5L)(longs(during, MetricNames.Buffered)(("held", ""))), during)
          val queue = metric(during, MetricNames.InFlight).getLongSumData.getPoints.asScala.head.getAttributes
          assertEquals(queue.get(AttributeKey.stringKey(MetricNames.QueueName)), "q1")
          val finished = longs(after, MetricNames.Finished)
          assertEquals(finished(("held", "interrupted")), 3L)
          assertEquals(finished(("held", "not_started")), summary.notStarted)
          assertEquals(finished.values.sum, longs(after, MetricNames.Received)(("held", "")))
          assertEquals(longs(after, MetricNames.InFlight), Map(("held", "") -> 0L))
          assertEquals(histogram(after, "held").getCount, 3L) // the interrupted tasks' time counts too
        }
      }
    }
  }

  test("queue waits: the series whose runs measured them get weir.task.queue_wait, exactly; others none") {
    // one slot, five tasks of 10 ms in one chunk at time zero: they wait 0, 10, 20, 30 and 40 ms
    val waited = Pipeline(Stream.emits(0 until 5).covary[IO])
      .process(_ => IO.sleep(10.millis))
      .withLimit(Limit.fixed(1))
      .withQueueWaits
    setup().use { s =>
      for
        _ <- TestControl.executeEmbed(s.metrics.run(waited, "waited"))
        _ <- TestControl.executeEmbed(s.metrics.run(waited, "waited"))
        _ <- TestControl.executeEmbed(knownRun(s.metrics, "unmeasured"))
        ms <- s.collect
      yield
        val waits = metric(ms, MetricNames.QueueWait)
        assertEquals(waits.getUnit, "s")
        val points = waits.getHistogramData.getPoints.asScala.toVector
        assertEquals(points.map(_.getAttributes.get(pipelineKey)), Vector("waited"))
        val h = points.head
        assertEquals(h.getCount, 10L)
        assertEqualsDouble(h.getSum, 2 * 0.100, 1e-9)
        assertEqualsDouble(h.getMax, 0.040, 1e-12)
        val millis = Vector(0, 10, 20, 30, 40, 0, 10, 20, 30, 40)
        val bounds = WeirMetrics.DefaultLatencyBounds.map(_.toNanos / 1e6)
        val expected = (bounds :+ Double.PositiveInfinity).zipWithIndex.map { (upper, i) =>
          val lower = if i == 0 then -1.0 else bounds(i - 1)
          millis.count(w => w > lower && w <= upper).toLong
        }
        assertEquals(h.getCounts.asScala.map(_.longValue).toVector, expected)
        assertEquals(histogram(ms, "waited").getCount, 10L) // the latencies of the same runs, as ever
    }
  }

  test("without a latency producer: the counters and gauges, and no histogram") {
    setup(latencies = false).use { s =>
      for
        _ <- TestControl.executeEmbed(knownRun(s.metrics, "plain"))
        ms <- s.collect
      yield
        assertEquals(longs(ms, MetricNames.Received), Map(("plain", "") -> 20L))
        assert(!ms.exists(_.getName == MetricNames.Duration), ms.map(_.getName))
    }
  }

  test("wake-ups: one worker, a task a second, woken once per task (the last time by the source's end)") {
    setup().use { s =>
      val trickle = Pipeline(Stream.range(0, 5).covary[IO].metered(1.second))
        .process(_ => IO.unit)
        .withLimit(Limit.fixed(1))
      for
        _ <- TestControl.executeEmbed(s.metrics.run(trickle, "trickle"))
        ms <- s.collect
      yield assertEquals(longs(ms, MetricNames.WakeUps), Map(("trickle", "") -> 5L))
    }
  }

  test("bad bounds fail with the values named; a producer serves one WeirMetrics at a time") {
    val producer = LatencyProducer()
    val meter = org.typelevel.otel4s.metrics.Meter.noop[IO]
    for
      bad <- WeirMetrics.register(meter, None, Vector(1.second, 1.milli)).use_.attempt
      empty <- WeirMetrics.register(meter, None, Vector.empty).use_.attempt
      twice <- WeirMetrics.register(meter, Some(producer)).use(_ =>
        WeirMetrics.register(meter, Some(producer)).use_
      ).attempt
      again <- WeirMetrics.register(meter, Some(producer)).use_.attempt // free again once released
    yield
      assertEquals(
        bad.left.map(_.getMessage),
        Left(
          "invalid WeirMetrics: latencyBounds: bucket bounds must be >= 0 and strictly ascending, " +
            "were: 1 second, 1 millisecond"
        )
      )
      assertEquals(
        empty.left.map(_.getMessage),
        Left("invalid WeirMetrics: latency bounds must not be empty, was: none")
      )
      assert(empty.left.exists(_.isInstanceOf[weir.InvalidSettings]), empty)
      assert(twice.left.exists(_.getMessage.contains("already bound")), twice)
      assertEquals(again, Right(()))
  }

  test("outcomes: the stream's run is reported once it ends, every outcome counted") {
    setup().use { s =>
      val pipeline = Pipeline(Stream.range(0, 50).covary[IO])
        .process(i => IO.raiseError(new RuntimeException("odd")).whenA(i % 2 == 1))
      for
        outcomes <- s.metrics.outcomes(pipeline, "streamed").compile.toVector
        ms <- s.collect
      yield
        assertEquals(outcomes.size, 50)
        val finished = longs(ms, MetricNames.Finished)
        assertEquals((finished(("streamed", "succeeded")), finished(("streamed", "skipped"))), (25L, 25L))
        assertEquals(histogram(ms, "streamed").getCount, 50L)
    }
  }
