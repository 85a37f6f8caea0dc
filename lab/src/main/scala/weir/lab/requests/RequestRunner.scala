package weir.lab.requests

import cats.effect.{IO, Resource}
import cats.effect.unsafe.{IORuntime, Scheduler}
import org.HdrHistogram.Histogram
import me.tongfei.progressbar.{ProgressBar, ProgressBarBuilder, ProgressBarStyle}

import java.util.concurrent.{Executors, ThreadFactory, TimeoutException}
import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.ExecutionContext
import scala.concurrent.duration.*

/**
 * Runs one approach in this JVM against a server and measures it: the client's counters and latencies
 * ([[Recorder]]), this JVM's heap, threads and CPU ([[JvmWatch]]), the server's counters before and after
 * (`GET /stats`), and a sample of in flight and completed every `sampleEvery`.
 */
object RequestRunner:

  /** What the runner needs besides the approach. */
  final case class Setup(
      n: Long,
      concurrency: Int,
      client: ClientKind,
      timeLimit: FiniteDuration,
      ideal: RequestIdeal.Figures,
      progress: Boolean,
      /** called with every sample (the child JVM prints them for its parent) */
      onSample: Sample => IO[Unit] = _ => IO.unit
  )

  def run(approach: RequestApproach, setup: Setup, server: ServerHandle): IO[RequestResult] =
    asyncClient(setup, server).use(async => run(approach, setup, server, async))

  /** The asynchronous client `setup` asks for, talking to `server`. */
  def asyncClient(setup: Setup, server: ServerHandle): Resource[IO, RequestClient] =
    RequestClient.async(setup.client, server.baseUrl, setup.concurrency, setup.timeLimit)

  /**
   * [[run]] with an asynchronous client made by the caller, so that several runs can share it (and its
   * open connections: the warm-up run leaves them open for the measured one).
   */
  def run(
      approach: RequestApproach,
      setup: Setup,
      server: ServerHandle,
      async: RequestClient
  ): IO[RequestResult] =
    val sampleEvery = math.max(100L, setup.ideal.makespanMs / 500).millis
    def clients(recorder: Recorder) =
      for jdk <- RequestClient.jdk(server.baseUrl, setup.timeLimit)
      yield RequestContext(
        setup.n,
        setup.concurrency,
        id => recorder.call(id, async.get(id)),
        id => IO.blocking(recorder.callBlocking(id, jdk.getBlocking(id))),
        id => IO(recorder.callBlocking(id, jdk.getBlocking(id)))
      )
    // the server's counters, its peak restarted once nothing of an earlier run is in flight there: a
    // request the client gave up on keeps the server busy until its delay ends
    val started = server.resetPeak.flatMap(s =>
      if s.inFlight == 0 then IO.pure(s)
      else
        server.quiesce(s.maxDelayMs.millis + 5.seconds).flatMap(left =>
          IO.whenA(left > 0)(
            IO.println(s"${approach.name}: the server still had $left requests in flight from an earlier run")
          ) *> server.resetPeak
        )
    )
    started.flatMap { before =>
      // the server's own seed and maximum delay: each request's delay, hence its overhead, is known
      val recorder =
        new Recorder(setup.concurrency, id => DelayServer.delayMs(before.seed, id, before.maxDelayMs))
      clients(recorder).use(ctx => measure(approach, setup, server, recorder, ctx, before, sampleEvery))
    }

  private def measure(
      approach: RequestApproach,
      setup: Setup,
      server: ServerHandle,
      recorder: Recorder,
      ctx: RequestContext,
      before: DelayServer.Stats,
      sampleEvery: FiniteDuration
  ): IO[RequestResult] =
    for
      measured <- JvmWatch.resource.use { watch =>
        val samples = Vector.newBuilder[Sample]
        IO.monotonic.flatMap { t0 =>
          def sample: IO[Sample] = IO.monotonic.map(t =>
            Sample((t - t0).toMillis, recorder.inFlight, recorder.completed)
          )
          val sampler = bar(setup).use { b =>
            (IO.sleep(sampleEvery) *> sample.flatTap(s => IO(show(b, s, setup)) *> setup.onSample(s))
              .flatMap(s => IO(samples += s))).foreverM
          }
          val program = placed(approach, ctx).timeout(setup.timeLimit).attempt
          for
            outcome <- sampler.background.surround(program)
            t1 <- IO.monotonic
            last <- sample
            _ <- setup.onSample(last)
          yield (
            outcome,
            (t1 - t0).toNanos / 1e6,
            samples.result() :+ last,
            watch.peakHeapMiB,
            watch.peakAfterGcMiB,
            watch.peakThreads,
            watch.cpuMs
          )
        }
      }
      after <- server.stats
    yield
      val (outcome, elapsedMs, samples, heap, afterGc, threads, cpu) = measured
      val (status, detail) = outcome match
        case Right(_) => ("ok", recorder.error.map(e => s"first error: $e"))
        case Left(_: TimeoutException) =>
          val stopped = s"stopped at the ${setup.timeLimit.toSeconds} s time limit"
          ("timed out", Some(recorder.error.fold(stopped)(e => s"$stopped; first error: $e")))
        case Left(e) => ("failed", Some(e.toString))
      val h = recorder.histogram
      val o = recorder.overheadHistogram
      // a histogram's figure in ms; NaN when it holds nothing (no request ended, or none succeeded)
      def ms(of: Histogram, micros: Histogram => Double) =
        if of.getTotalCount == 0 then Double.NaN else micros(of) / 1000.0
      RequestResult(
        approach.name,
        status,
        detail,
        setup.n,
        setup.concurrency,
        recorder.succeeded,
        recorder.failed,
        elapsedMs,
        setup.ideal.makespanMs.toDouble,
        setup.ideal.littleBoundPerSecond,
        recorder.peakInFlight,
        after.peakInFlight,
        after.served - before.served,
        heap,
        afterGc,
        JvmWatch.heapCapMiB,
        threads,
        cpu,
        after.cpuMs - before.cpuMs,
        ms(h, _.getValueAtPercentile(50).toDouble),
        ms(h, _.getValueAtPercentile(99).toDouble),
        ms(h, _.getMaxValue.toDouble),
        recorder.fillMs,
        ms(o, _.getMean),
        ms(o, _.getValueAtPercentile(50).toDouble),
        ms(o, _.getValueAtPercentile(99).toDouble),
        samples
      )

  private def placed(approach: RequestApproach, ctx: RequestContext): IO[Unit] =
    approach.placement match
      case RequestApproach.Placement.OwnPool =>
        onOwnPool(approach.run(ctx), Runtime.getRuntime.availableProcessors)
      case _ => approach.run(ctx)

  /**
   * Runs `program` on a runtime whose compute pool is `threads` fixed threads (the write-up's compute pool:
   * one thread per core), so that its blocked threads cannot starve the lab's own fibers. Cancelling shuts
   * that runtime down.
   */
  private def onOwnPool(program: IO[Unit], threads: Int): IO[Unit] =
    val runtime = Resource.make(IO {
      val counter = new AtomicInteger(0)
      val factory: ThreadFactory = r => {
        val t = new Thread(r, s"weir-requests-compute-${counter.incrementAndGet()}")
        t.setDaemon(true)
        t
      }
      val pool = Executors.newFixedThreadPool(threads, factory)
      val (scheduler, stopScheduler) = Scheduler.createDefaultScheduler()
      IORuntime.builder()
        .setCompute(ExecutionContext.fromExecutor(pool), () => { val _ = pool.shutdownNow() })
        .setScheduler(scheduler, stopScheduler)
        .build()
    })(rt => IO.blocking(rt.shutdown()))
    runtime.use { rt =>
      IO.async[Unit] { cb =>
        IO {
          program.unsafeToFuture()(using rt).onComplete(r => cb(r.toEither))(using ExecutionContext.parasitic)
          // a fiber that blocks its thread sees its cancellation only after the call: with every thread
          // blocked and thousands of fibers queued that takes as long as the rest of the run, so a
          // cancellation stops the pool instead (its blocked calls are interrupted and fail)
          Some(IO.blocking(rt.shutdown()))
        }
      }
    }

  private def bar(setup: Setup): Resource[IO, Option[ProgressBar]] =
    if !setup.progress then Resource.pure(None)
    else
      Resource.make(IO(Some(
        new ProgressBarBuilder().setTaskName("requests").setInitialMax(setup.n)
          .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(200).continuousUpdate().build()
      )))(b => IO(b.foreach(_.close())))

  private def show(bar: Option[ProgressBar], s: Sample, setup: Setup): Unit =
    bar.foreach(_.stepTo(s.completed).setExtraMessage(s" in flight ${s.inFlight}/${setup.concurrency}"): Unit)
