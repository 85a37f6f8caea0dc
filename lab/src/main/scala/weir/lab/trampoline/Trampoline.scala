package weir.lab.trampoline

import cats.effect.{ExitCode, IO}
import cats.effect.unsafe.IORuntime
import cats.syntax.all.*
import io.circe.Json
import io.circe.syntax.*
import org.knowm.xchart.{XYChart, XYChartBuilder}
import org.knowm.xchart.style.Styler
import scopt.OParser
import weir.cli.{CommandLine, Table}
import weir.cli.CommandLine.positive
import weir.runtime.WeirRuntime
import weir.lab.Experiment
import weir.lab.report.ExperimentIo
import weir.lab.report.ExperimentIo.number

import java.nio.file.{Path, Paths}
import java.util.concurrent.atomic.AtomicReference

/**
 * `./weir lab trampoline`: seed 004's experiment. `A(m, n)` for a range of `n` (so of step counts),
 * computed by plain recursion on a thread with a known stack size (reporting where it overflows instead
 * of crashing), by `Future` with a pool hop per step, by `IO` suspended at every step, by `IO` with an
 * `IO.cede` per step, and by `IO` that suspends only when its direct calls are deep.
 */
object Trampoline extends Experiment:
  val label = "trampoline"
  val summary =
    "seed 004: Ackermann by plain recursion, Future hops, IO trampolined, IO.cede, depth-counting IO"

  /** No point may take more steps than this (a `Future` step costs microseconds). */
  val MaxSteps: Long = 20_000_000L

  final case class Settings(
      m: Int = 2,
      ns: Seq[Int] = Seq(1, 3, 10, 30, 100, 300, 1000),
      runs: Int = 5,
      stackKb: Int = 128,
      maxDepth: Int = 512,
      quick: Boolean = false,
      json: Option[Path] = None,
      chart: Option[Path] = None
  ):
    /** `--quick`: the first four `n`, one measured run. */
    def points: Seq[Int] = if quick then ns.take(4) else ns
    def measuredRuns: Int = if quick then 1 else runs

  /** One approach at one `n`: the median and fastest run in µs, or why there is none. */
  final case class Cell(approach: String, medianUs: Double, minUs: Double, runs: Int, error: Option[String])

  final case class Point(m: Int, n: Int, value: Int, steps: Long, frames: Int, cells: Vector[Cell])

  /** The deepest the plain recursion got on a thread of `stackKb` KiB before `StackOverflowError`. */
  final case class Overflow(stackKb: Int, frames: Int)

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    OParser.sequence(
      programName("weir lab trampoline"),
      head("seed 004: trampolines vs thread pools vs plain recursion on the Ackermann function"),
      help("help").text("print this help"),
      opt[Int]("m").valueName("M")
        .validate(m => if m >= 0 && m <= 3 then success else failure(s"--m must be in [0, 3], was: $m"))
        .action((m, s) => s.copy(m = m)).text("first argument of A(m, n) (default 2)"),
      opt[Seq[Int]]("n").valueName("a,b,...")
        .validate(ns =>
          if ns.isEmpty then failure("--n needs at least one value")
          else ns.find(_ < 0).fold(success)(bad => failure(s"--n values must be >= 0, was: $bad"))
        )
        .action((ns, s) => s.copy(ns = ns)).text(
          "second arguments, one point each (default 1,3,10,30,100,300,1000)"
        ),
      opt[Int]("runs").valueName("N")
        .validate(positive("--runs"))
        .action((n, s) => s.copy(runs = n)).text(
          "measured runs per point after one warm-up (default 5; fewer past 2 s)"
        ),
      opt[Int]("stack-kb").valueName("KB")
        .validate(k =>
          if k >= 16 && k <= 65536 then success else failure(s"--stack-kb must be in [16, 65536], was: $k")
        )
        .action((k, s) => s.copy(stackKb = k))
        .text(
          "stack of the measuring thread, where the plain recursion runs (default 128; the JVM may round it up)"
        ),
      opt[Int]("max-depth").valueName("N")
        .validate(positive("--max-depth"))
        .action((n, s) => s.copy(maxDepth = n)).text(
          "io-depth: direct calls nested before it suspends (default 512)"
        ),
      opt[Unit](
        "quick"
      ).action((_, s) => s.copy(quick = true)).text("for CI: the first four n, one run each"),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON (default: none)"),
      opt[String]("chart").valueName("FILE.png").action((f, s) => s.copy(chart = Some(Paths.get(f))))
        .text("also draw time per run against steps, log-log (PNG) (default: none)"),
      checkConfig(s =>
        s.points.find(n => Ackermann.shape(s.m, n, MaxSteps).isEmpty) match
          case Some(n) => failure(s"--n $n: A(${s.m}, $n) takes more than $MaxSteps steps")
          case None => success
      )
    )

  def run(args: List[String]): IO[ExitCode] = CommandLine.runWith(parser, args, Settings())(execute(_).void)

  override def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Settings())

  def execute(s: Settings): IO[(Vector[Point], Overflow)] =
    val approaches = Approach.all(s.maxDepth)
    for
      _ <- IO.println(
        s"weir lab trampoline — A(${s.m}, n) for n in ${s.points.mkString(", ")}, ${s.measuredRuns} run(s) after a warm-up, " +
          s"measuring thread stack ${s.stackKb} KiB, ${Runtime.getRuntime.availableProcessors} cores, JDK ${System.getProperty("java.version")}"
      )
      result <-
        WeirRuntime.resource.use(rt => IO.interruptible(onStack(s.stackKb)(measureAll(s, approaches, rt))))
      (points, overflow) = result
      _ <- IO.println(table(approaches, points, overflow))
      _ <- s.json.traverse_(p => ExperimentIo.writeJson(p, json(s, points, overflow)))
      _ <- s.chart.traverse_(p => ExperimentIo.writePng(p, chart(approaches, points, overflow)))
    yield (points, overflow)

  /** Runs `body` on a new platform thread with a stack of `kb` KiB and waits for it. */
  def onStack[A](kb: Int)(body: => A): A =
    val result = new AtomicReference[Either[Throwable, A]](Left(new IllegalStateException("no result")))
    val thread = new Thread(
      null,
      () =>
        result.set(try Right(body)
        catch case e: Throwable => Left(e)),
      "weir-trampoline",
      kb * 1024L
    )
    thread.start()
    thread.join()
    result.get.fold(e => throw e, identity)

  /** The deepest the plain recursion gets on this thread: A(1, n) with n far beyond any stack. */
  def probeOverflow(): Int =
    val probe = new Ackermann.DepthProbe
    try
      val _ = probe.ack(1, 100_000_000)
      throw new IllegalStateException("A(1, 100000000) did not overflow the stack")
    catch case _: StackOverflowError => probe.maxFrames

  /** Every approach at every point, on the calling thread, then the overflow probe (3 times, the deepest). */
  def measureAll(s: Settings, approaches: Vector[Approach], rt: IORuntime): (Vector[Point], Overflow) =
    val points = s.points.toVector.map { n =>
      val shape = Ackermann.shape(s.m, n).get
      val cells = approaches.map(a => measure(a, s.m, n, shape.value, s.measuredRuns, rt))
      System.err.println(
        f"  A(${s.m}, $n) = ${shape.value}: ${shape.steps} steps, ${shape.frames} frames  " +
          cells.map(c =>
            c.error.fold(f"${c.approach} ${c.medianUs}%.1f µs")(e => s"${c.approach} $e")
          ).mkString(", ")
      )
      Point(s.m, n, shape.value, shape.steps, shape.frames, cells)
    }
    (points, Overflow(s.stackKb, (1 to 3).map(_ => probeOverflow()).max))

  /** One warm-up run, then up to `runs` timed runs (stopping once 2 s have been spent); each result checked. */
  def measure(a: Approach, m: Int, n: Int, expected: Int, runs: Int, rt: IORuntime): Cell =
    def once(): Either[String, Long] =
      val t0 = System.nanoTime()
      try
        val v = a.compute(m, n, rt)
        val t = System.nanoTime() - t0
        Either.cond(v == expected, t, s"wrong value $v, expected $expected")
      catch case _: StackOverflowError => Left("overflow")
    once() match
      case Left(e) => Cell(a.name, Double.NaN, Double.NaN, 0, Some(e))
      case Right(_) =>
        val times = Vector.newBuilder[Long]
        var spent = 0L
        var i = 0
        var error: Option[String] = None
        while i < runs && spent < 2_000_000_000L && error.isEmpty do
          once() match
            case Right(t) => times += t; spent += t
            case Left(e) => error = Some(e)
          i += 1
        val sorted = times.result().sorted
        if error.isDefined || sorted.isEmpty then Cell(a.name, Double.NaN, Double.NaN, sorted.size, error)
        else Cell(a.name, sorted(sorted.size / 2) / 1e3, sorted.head / 1e3, sorted.size, None)

  def table(approaches: Vector[Approach], points: Vector[Point], overflow: Overflow): String =
    val header = Vector("A(m, n)", "steps", "frames") ++ approaches.map(a => s"${a.name} µs")
    val rows = points.map { p =>
      Vector(s"A(${p.m}, ${p.n})", p.steps.toString, p.frames.toString) ++ p.cells.map(c =>
        c.error.getOrElse(if c.medianUs < 10 then f"${c.medianUs}%.2f" else f"${c.medianUs}%.0f")
      )
    }
    "\nmedian time of one computation of A(m, n), µs; frames: the plain recursion's deepest stack\n" +
      Table.grid(header +: rows, rightAligned = (1 until header.size).toSet) +
      s"  plain recursion overflows at ${overflow.frames} frames on a ${overflow.stackKb} KiB thread stack\n"

  def json(s: Settings, points: Vector[Point], overflow: Overflow): Json =
    Json.obj(
      "experiment" -> "trampoline".asJson,
      "environment" -> ExperimentIo.environment,
      "settings" -> Json.obj(
        "m" -> s.m.asJson,
        "n" -> s.points.asJson,
        "runs" -> s.measuredRuns.asJson,
        "stack_kb" -> s.stackKb.asJson,
        "max_depth" -> s.maxDepth.asJson
      ),
      "overflow" -> Json.obj("stack_kb" -> overflow.stackKb.asJson, "frames" -> overflow.frames.asJson),
      "records" -> points.flatMap { p =>
        p.cells.map { c =>
          Json.obj(
            "approach" -> c.approach.asJson,
            "m" -> p.m.asJson,
            "n" -> p.n.asJson,
            "value" -> p.value.asJson,
            "steps" -> p.steps.asJson,
            "frames" -> p.frames.asJson,
            "median_us" -> number(c.medianUs),
            "min_us" -> number(c.minUs),
            "ns_per_step" -> number(c.medianUs * 1e3 / p.steps),
            "runs" -> c.runs.asJson,
            "status" -> c.error.getOrElse("ok").asJson
          )
        }
      }.asJson
    )

  def chart(approaches: Vector[Approach], points: Vector[Point], overflow: Overflow): XYChart =
    val c = new XYChartBuilder().width(900).height(500)
      .title(s"seed 004: time per computation of A(m, n) (plain overflows past ${overflow.frames} frames)")
      .xAxisTitle("steps").yAxisTitle("µs (median)").build()
    c.getStyler.setXAxisLogarithmic(true)
    c.getStyler.setYAxisLogarithmic(true)
    c.getStyler.setLegendPosition(Styler.LegendPosition.InsideNW)
    approaches.foreach { a =>
      val ok = points.flatMap(p =>
        p.cells.find(c => c.approach == a.name && c.error.isEmpty).map(c => (p.steps.toDouble, c.medianUs))
      )
      if ok.nonEmpty then
        val _ = c.addSeries(a.name, ok.map(_._1).toArray, ok.map(_._2).toArray)
    }
    c
