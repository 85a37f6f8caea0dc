package weir.lab

import cats.effect.IO
import cats.syntax.all.*
import weir.lab.approaches.*
import weir.lab.report.*
import weir.lab.scenarios.*

import java.nio.file.{Files, Path}
import scala.concurrent.duration.*

/**
 * `./weir compare`: the write-up's experiment (seed 000) — every approach on every load shape, each run
 * against the ideal schedule of the same delays — as a terminal table, optionally JSON and an HTML report.
 */
object Compare:

  /**
   * @param timeScale real delays are the workload's times this (real clock only; virtual time is free)
   * @param live      redraw the P/C lines while each approach runs (real clock only)
   * @param parallel  run the load shapes side by side (each shape's approaches still one at a time): the
   *                  full real run takes as long as its slowest shape instead of the sum, at the price of
   *                  the peak threads and heap, which are then the JVM's and not reported
   */
  final case class Settings(
      clock: Clock = Clock.Real,
      timeScale: Double = 1.0,
      seed: Long = 0L,
      runs: Int = 1,
      workloads: Vector[Workload] = Workload.defaults,
      approaches: Vector[Approach] = Approach.all,
      json: Option[Path] = None,
      report: Option[Path] = None,
      live: Boolean = true,
      parallel: Boolean = false
  ):
    require(timeScale > 0, s"time scale must be > 0, was: $timeScale")
    require(runs > 0, s"runs must be > 0, was: $runs")

    /** Virtual time has nothing to shrink: the scale applies to the real clock only. */
    def scale: Double = if clock == Clock.Virtual then 1.0 else timeScale

  def run(s: Settings): IO[Vector[Measurement]] =
    for
      _ <- IO.println(header(s))
      measurements <- measureAll(s, m => IO(System.err.println(progressLine(m))))
      _ <- IO.println(Table.render(Rows.of(measurements), s.workloads, s.runs))
      env = JsonReport.Environment.current(s.seed, s.clock.toString.toLowerCase, s.scale, s.runs)
      _ <- s.json.traverse_ { path =>
        IO.blocking(Files.writeString(path, JsonReport.render(env, measurements).spaces2)) *>
          IO.println(s"wrote $path")
      }
      _ <- s.report.traverse_ { dir =>
        Report.write(dir, env, s.workloads, measurements) *> IO.println(s"wrote ${dir.resolve("index.html")}")
      }
    yield measurements

  /**
   * Every (load shape, run, approach), one at a time so that peaks and timings are each approach's own.
   *
   * With `parallel`, the load shapes run side by side, except for approaches that block the runtime's
   * threads ([[Approach.blocksThreads]]): two of those at once could block every compute thread and freeze
   * the run (the write-up's deadlock), so they run afterwards, one at a time. The results come back in the
   * same order either way: by load shape, run, then approach.
   */
  def measureAll(s: Settings, each: Measurement => IO[Unit]): IO[Vector[Measurement]] =
    def measure(w: Workload, approaches: Vector[Approach]): IO[Vector[Measurement]] =
      (0 until s.runs).toVector.flatTraverse { r =>
        val plan = Plan.draw(w, s.seed, r)
        val ideals = approaches.map(_.producers(w)).distinct.map(p => p -> Ideal.of(plan, p).makespan).toMap
        approaches.traverse(a => measureOne(s, plan, a, ideals(a.producers(w))).flatTap(each))
      }
    if !s.parallel then s.workloads.flatTraverse(measure(_, s.approaches))
    else
      val (alone, sideBySide) = s.approaches.partition(_.blocksThreads)
      val rank = (
        s.workloads.map(_.name).zipWithIndex.toMap,
        s.approaches.map(_.name).zipWithIndex.toMap
      )
      for
        together <- s.workloads.parFlatTraverse(measure(_, sideBySide))
        apart <- s.workloads.flatTraverse(measure(_, alone))
      yield (together ++ apart).sortBy(m => (rank._1(m.scenario), m.run, rank._2(m.approach)))

  def measureOne(s: Settings, plan: Plan, approach: Approach, idealWorkloadMs: Long): IO[Measurement] =
    val w = plan.workload
    // the blocking demo always runs in real time; under the virtual clock it gets a tenth of the delays
    val scale = approach.placement match
      case Placement.FixedPool(_) if s.clock == Clock.Virtual => 0.1
      case _ => s.scale
    val bench = new Bench(plan, s.clock, scale, new Recorder(w.tasks, w.batches))
    val idealMs = idealWorkloadMs * scale
    val limit = (s.clock, approach.placement) match
      case (Clock.Virtual, Placement.Shared) => (idealWorkloadMs * 100 + 1000).millis
      case _ => (idealMs * 10).millis.max(30.seconds)
    val longestDelay = (plan.produceMs ++ plan.consumeMs).max
    val stall = 1.second + (2 * longestDelay * scale).millis
    val live = Option.when(
      s.live && !s.parallel && s.clock == Clock.Real && approach.placement == Placement.Shared
    )(new LiveView())
    Measure(approach, bench, idealMs, limit, stall, live, w.name, peaks = !s.parallel)

  private def progressLine(m: Measurement): String =
    val result = m.status match
      case Status.Ok => f"${m.makespanMs}%.1f ms, ideal ${m.idealMs}%.1f ms, ratio ${m.ratio}%.3f"
      case Status.Failed(reason) => s"failed: $reason"
      case other => other.label
    f"  ${m.scenario}%-16s run ${m.run}%-2d ${m.approach}%-30s $result"

  private def header(s: Settings): String =
    val clock = s.clock match
      case Clock.Virtual => "virtual (TestControl)"
      case Clock.Real =>
        (if s.timeScale == 1.0 then "real" else s"real, delays × ${s.timeScale}") +
          (if s.parallel then ", load shapes side by side" else "")
    s"weir compare — clock: $clock, seed ${s.seed}, ${s.runs} run(s), JDK ${System.getProperty("java.version")}, " +
      s"${Runtime.getRuntime.availableProcessors} cores"
