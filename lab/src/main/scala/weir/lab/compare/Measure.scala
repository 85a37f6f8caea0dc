package weir.lab
package compare

import cats.effect.IO
import cats.syntax.all.*
import cats.effect.testkit.TestControl
import cats.effect.unsafe.{IORuntime, Scheduler}
import weir.lab.compare.approaches.*
import weir.lab.compare.report.LiveView
import weir.lab.compare.scenarios.Ideal

import java.lang.management.{ManagementFactory, MemoryType}
import java.util.concurrent.{Executors, ThreadFactory, TimeoutException}
import scala.concurrent.ExecutionContext
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/** Runs one approach on one bench and measures it: makespan, status, peak threads and heap. */
object Measure:

  /**
   * @param limit the run's time limit (real or virtual, as the bench's clock); a run still going then is
   *              `TimedOut`
   * @param stall for approaches on a pool of their own: no produce or consume at all for this long (real
   *              time) while the pool's threads are all blocked means `Deadlocked`
   * @param boundedIdealMs the bounded ideal's makespan in the bench's (scaled) ms, when the workload has one
   * @param peaks measure the JVM's peak threads and heap (reset before the run): only meaningful when
   *              nothing else runs at the same time
   */
  def apply(
      approach: Approach,
      bench: Bench,
      idealMs: Double,
      boundedIdealMs: Option[Double],
      limit: FiniteDuration,
      stall: FiniteDuration,
      live: Option[LiveView],
      scenario: String,
      peaks: Boolean
  ): IO[Measurement] =
    val program: IO[FiniteDuration] =
      bench.recorder.start *> IO.monotonic.flatMap(t0 => approach.run(bench) *> IO.monotonic.map(_ - t0))
    val timed: IO[Either[Status, FiniteDuration]] =
      approach.placement match
        case Placement.FixedPool(threads) => onOwnPool(program, threads, bench.recorder, limit, stall)
        case Placement.Shared =>
          bench.clock match
            case Clock.Real => outcome(program.timeout(limit).attempt)
            case Clock.Virtual =>
              // TestControl picks among fibers due at the same instant at random: a fixed seed makes it repeatable
              outcome(TestControl.executeEmbed(program.timeout(limit), seed = Some(virtualSeed)).attempt)
    val watched =
      live.fold(timed)(v => v.show(approach.name, bench.recorder, bench.workload.tasks).surround(timed))
    for
      _ <- IO(resetPeaks()).whenA(peaks)
      result <- watched
      threads <- IO(Option.when(peaks)(ManagementFactory.getThreadMXBean.getPeakThreadCount))
      heap <- IO(Option.when(peaks)(peakHeapMiB))
      checked = result.flatMap { d =>
        val wrong = bench.recorder.miscounted
        val peak = bench.recorder.peakInFlight
        if peak > bench.workload.slots then
          Left(Status.Failed(s"$peak tasks in flight at once, above the ${bench.workload.slots} slots"))
        else if wrong.isEmpty then Right(d)
        else
          Left(Status.Failed(
            s"${wrong.size} tasks not consumed exactly once, e.g. ${wrong.take(3).mkString(", ")}"
          ))
      }
      ownOrder = checked.toOption.flatMap(_ => bench.recorder.started).map(order =>
        Ideal.inOrder(bench.plan, approach.producers(bench.workload), order) * bench.scale
      )
    yield Measurement(
      scenario,
      approach.name,
      bench.plan.run,
      approach.producers(bench.workload),
      checked.fold(_ => Double.NaN, _.toNanos / 1e6),
      idealMs,
      boundedIdealMs,
      ownOrder,
      checked.fold(identity, _ => Status.Ok),
      threads,
      heap,
      bench.recorder.peakInFlight,
      bench.recorder.producedTimes,
      bench.recorder.consumedTimes
    )

  /** TestControl's seed (a Base64-encoded number). */
  private val virtualSeed: String = java.util.Base64.getEncoder.encodeToString("1".getBytes("UTF-8"))

  private def outcome(attempt: IO[Either[Throwable, FiniteDuration]]): IO[Either[Status, FiniteDuration]] =
    attempt.map {
      case Right(d) => Right(d)
      case Left(_: TimeoutException) => Left(Status.TimedOut)
      // TestControl: every fiber is waiting and no timer is pending, so nothing can ever run again
      case Left(_: TestControl.NonTerminationException) => Left(Status.Deadlocked)
      case Left(e) => Left(Status.Failed(e.toString))
    }

  /**
   * Runs `program` on a runtime of its own with `threads` fixed compute threads, watched from a blocking
   * thread of the caller's runtime, so a program that blocks every thread of its pool cannot hang the
   * caller. Whatever happens, the pool is shut down afterwards (`shutdownNow` interrupts blocked threads).
   */
  private def onOwnPool(
      program: IO[FiniteDuration],
      threads: Int,
      recorder: Recorder,
      limit: FiniteDuration,
      stall: FiniteDuration
  ): IO[Either[Status, FiniteDuration]] =
    IO.blocking {
      val prefix = s"weir-fixed-pool-${pools.incrementAndGet()}-"
      val counter = new java.util.concurrent.atomic.AtomicInteger(0)
      val factory: ThreadFactory = r => {
        val t = new Thread(r, s"$prefix${counter.incrementAndGet()}")
        t.setDaemon(true)
        t
      }
      val pool = Executors.newFixedThreadPool(threads, factory)
      val (scheduler, stopScheduler) = Scheduler.createDefaultScheduler()
      val runtime = IORuntime.builder()
        .setCompute(ExecutionContext.fromExecutor(pool), () => { val _ = pool.shutdownNow() })
        .setScheduler(scheduler, stopScheduler)
        .build()
      try
        val future = program.unsafeToCompletableFuture()(using runtime)
        val started = System.nanoTime()
        var lastProgress = (recorder.producedSoFar, recorder.consumedSoFar)
        var lastChange = started
        var result: Option[Either[Status, FiniteDuration]] = None
        while result.isEmpty do
          try result = Some(Right(future.get(100, MILLISECONDS)))
          catch
            case _: TimeoutException =>
              val now = System.nanoTime()
              val progress = (recorder.producedSoFar, recorder.consumedSoFar)
              if progress != lastProgress then
                lastProgress = progress
                lastChange = now
              if now - lastChange > stall.toNanos && allBlocked(prefix, threads) then
                result = Some(Left(Status.Deadlocked))
              else if now - started > limit.toNanos then result = Some(Left(Status.TimedOut))
            case e: java.util.concurrent.ExecutionException =>
              result = Some(Left(Status.Failed(e.getCause.toString)))
        result.get
      finally runtime.shutdown()
    }

  private val pools = new java.util.concurrent.atomic.AtomicInteger(0)

  /**
   * True when every thread of the fixed pool is waiting inside a task (not idle in the pool's own queue):
   * no thread is left to run anything.
   */
  private def allBlocked(prefix: String, threads: Int): Boolean =
    val mine = Thread.getAllStackTraces.asScala.filter(_._1.getName.startsWith(prefix))
    def stuck(t: Thread, stack: Array[StackTraceElement]) =
      (t.getState == Thread.State.WAITING || t.getState == Thread.State.TIMED_WAITING ||
        t.getState == Thread.State.BLOCKED) &&
        !stack.exists(e =>
          e.getClassName == "java.util.concurrent.ThreadPoolExecutor" && e.getMethodName == "getTask"
        )
    mine.size == threads && mine.forall(stuck)

  private def resetPeaks(): Unit =
    System.gc()
    ManagementFactory.getThreadMXBean.resetPeakThreadCount()
    ManagementFactory.getMemoryPoolMXBeans.asScala.filter(
      _.getType == MemoryType.HEAP
    ).foreach(_.resetPeakUsage())

  private def peakHeapMiB: Long =
    ManagementFactory.getMemoryPoolMXBeans.asScala
      .filter(_.getType == MemoryType.HEAP)
      .map(_.getPeakUsage.getUsed)
      .sum / (1024 * 1024)
