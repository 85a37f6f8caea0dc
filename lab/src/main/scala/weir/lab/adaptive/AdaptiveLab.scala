package weir.lab.adaptive

import cats.effect.{ExitCode, IO}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import io.circe.Json
import io.circe.syntax.*
import scopt.OParser
import weir.{AdaptiveAlgorithm, Limit}
import weir.cli.{CommandLine, Durations}
import weir.cli.CommandLine.positive
import weir.lab.Experiment
import weir.lab.report.ExperimentIo

import java.nio.file.{Files, Path, Paths}
import scala.concurrent.duration.*

/**
 * `./weir lab adaptive`: seed 001's problem — a fixed degree of parallelism is either too low (slow) or too
 * high (the upstream falls over). Fixed limits well below, at and well above a hidden capacity K, and
 * adaptive limits that are never told K, each against the same simulated [[Upstream]] whose K may change
 * while it runs: throughput, p50/p99 latency, errors, how fast the adaptive limits follow K, a chart.
 */
object AdaptiveLab extends Experiment:

  val label = "adaptive"
  val summary = "fixed limits vs adaptive ones against an upstream with a hidden, changing capacity"

  enum Clock:
    case Real, Virtual

  final case class Settings(
      model: Upstream.Model,
      duration: FiniteDuration,
      fixed: Vector[Int],
      algorithms: Vector[String],
      tolerance: Double,
      clock: Clock,
      every: FiniteDuration,
      settleTarget: FiniteDuration,
      json: Option[Path],
      chart: Option[Path],
      html: Option[Path]
  ):
    def toJson: Json = Json.obj(
      "clock" -> clock.toString.toLowerCase.asJson,
      "capacity" -> model.capacity.asJson,
      "capacity_changes" -> model.changes.map((t, k) => s"${t.toMillis}ms:$k").asJson,
      "base_latency_ms" -> (model.base.toNanos / 1e6).asJson,
      "hard_cap" -> model.hardCap.toString.asJson,
      "error_latency_ms" -> (model.errorLatency.toNanos / 1e6).asJson,
      "duration_s" -> (duration.toMillis / 1000.0).asJson,
      "fixed" -> fixed.asJson,
      "algorithms" -> algorithms.asJson,
      "gradient_tolerance" -> tolerance.asJson,
      "jdk" -> System.getProperty("java.version").asJson,
      "cores" -> Runtime.getRuntime.availableProcessors.asJson
    )

  final case class Outcome(
      results: Vector[Trial.Result],
      best: Option[Trial.Result],
      verdicts: Map[String, Analysis.Verdict]
  )

  val algorithms: Map[String, AdaptiveAlgorithm] =
    Map("gradient" -> AdaptiveAlgorithm.gradient(), "aimd" -> AdaptiveAlgorithm.aimd())

  /** Runs every configuration, one after the other. */
  def measure(s: Settings, each: Trial.Result => IO[Unit]): IO[Outcome] =
    val configs =
      s.fixed.map(n => (s"fixed $n", Limit.fixed(n))) ++
        s.algorithms.map { a =>
          val algorithm =
            if a == "gradient" then AdaptiveAlgorithm.gradient(tolerance = s.tolerance) else algorithms(a)
          (s"adaptive $a", Limit.adaptive(algorithm = algorithm))
        }
    configs.traverse { (label, limit) =>
      val trial = Trial.run(label, limit, s.model, s.duration, s.every)
      (s.clock match
        case Clock.Real => trial
        case Clock.Virtual => TestControl.executeEmbed(trial, seed = Some(virtualSeed))
      ).flatTap(each)
    }.map { results =>
      val best = Analysis.bestFixed(results, s.fixed.map(n => s"fixed $n").toSet)
      val verdicts = best.fold(Map.empty[String, Analysis.Verdict]) { b =>
        results.filter(_.name.startsWith("adaptive")).map(r =>
          r.name -> Analysis.verdict(r, b, s.model, s.settleTarget)
        ).toMap
      }
      Outcome(results, best, verdicts)
    }

  /** TestControl's seed: fibers due at the same instant run in an order drawn from it. */
  private val virtualSeed = java.util.Base64.getEncoder.encodeToString("1".getBytes("UTF-8"))

  override def check(args: List[String]): Either[String, Unit] =
    CommandLine.check(parser, args, Options())

  def run(args: List[String]): IO[ExitCode] =
    // the parser's own check has resolved the options: the verdicts are printed, a FAIL is a finding, not an error
    CommandLine.runWithCode(parser, args, Options())(o =>
      o.resolve.fold(
        why => CommandLine.refuse(why, OParser.usage(parser)),
        s => execute(s).as(ExitCode.Success)
      )
    )

  def execute(s: Settings): IO[Outcome] =
    for
      _ <- IO.println(header(s))
      outcome <- measure(s, r => IO(System.err.println(progress(r))))
      _ <- IO.println(AdaptiveReport.table(outcome.results, outcome.verdicts, s.model, outcome.best))
      _ <- s.json.traverse_ { path =>
        IO.blocking {
          Option(path.toAbsolutePath.getParent).foreach(p => Files.createDirectories(p))
          Files.writeString(
            path,
            AdaptiveReport.json(s.toJson, outcome.results, outcome.verdicts, s.model).spaces2
          )
        } *> IO.println(s"wrote $path")
      }
      _ <- s.chart.traverse_ { path =>
        val charted = AdaptiveReport.charted(outcome.results)
        IO.blocking(AdaptiveReport.writeChart(path, charted, s.model)) *> IO.println(s"wrote $path")
      }
      _ <- s.html.traverse_ { path =>
        IO.blocking(AdaptiveReport.html(header(s), outcome.results, outcome.verdicts, s.model, outcome.best))
          .flatMap(ExperimentIo.writeAtomically(path, _)) *> IO.println(s"wrote $path")
      }
    yield outcome

  private def progress(r: Trial.Result): String =
    f"  ${r.name}%-18s ${r.throughput}%8.0f/s  p99 ${r.p99.toNanos / 1e6}%.1f ms  errors ${r.errors}"

  private def header(s: Settings): String =
    val clock = if s.clock == Clock.Virtual then "virtual (TestControl)" else "real"
    s"weir lab adaptive — clock: $clock, ${s.duration.toSeconds} s per configuration, JDK " +
      s"${System.getProperty("java.version")}, ${Runtime.getRuntime.availableProcessors} cores"

  // ---- options ------------------------------------------------------------------------------------

  final case class Options(
      quick: Boolean = false,
      clock: Option[Clock] = None,
      capacity: Option[Int] = None,
      changes: Option[Vector[(FiniteDuration, Int)]] = None,
      latency: Option[FiniteDuration] = None,
      hardCap: Upstream.HardCap = Upstream.HardCap.Times(2.0),
      errorLatency: Option[FiniteDuration] = None,
      duration: Option[FiniteDuration] = None,
      fixed: Vector[Int] = Vector.empty,
      algorithms: Vector[String] = Vector.empty,
      tolerance: Double = 1.0,
      every: FiniteDuration = 100.millis,
      settleTarget: FiniteDuration = 3.seconds,
      json: Option[Path] = None,
      chart: Option[Path] = None,
      html: Option[Path] = None
  ):
    /** The full run's defaults, or `--quick`'s (virtual clock, smaller and slower upstream, 20 s). */
    def resolve: Either[String, Settings] =
      val k = capacity.getOrElse(if quick then 20 else 50)
      val base = latency.getOrElse(if quick then 50.millis else 10.millis)
      val dur = duration.getOrElse(if quick then 20.seconds else 30.seconds)
      val ch = changes.getOrElse(
        if quick then Vector(8.seconds -> math.max(1, k / 2), 14.seconds -> k)
        else Vector(10.seconds -> math.max(1, k / 2), 20.seconds -> k)
      )
      scala.util.Try(Upstream.Model(
        capacity = k,
        changes = ch.sortBy(_._1),
        base = base,
        hardCap = hardCap,
        errorLatency = errorLatency.getOrElse(base)
      ))
        .toEither.left.map(_.getMessage)
        .map { model =>
          Settings(
            model = model,
            duration = dur,
            fixed = if fixed.nonEmpty then fixed.distinct else Vector(math.max(1, k / 4), k, 4 * k),
            algorithms = if algorithms.nonEmpty then algorithms.distinct else Vector("gradient", "aimd"),
            tolerance = tolerance,
            clock = clock.getOrElse(if quick then Clock.Virtual else Clock.Real),
            every = every,
            settleTarget = settleTarget,
            json = json,
            chart = chart,
            html = html
          )
        }

  private val builder = OParser.builder[Options]
  val parser: OParser[Unit, Options] =
    import builder.*
    def dur(option: String) = Durations.opt(builder, option).validate(Durations.positive(s"--$option"))
    OParser.sequence(
      programName(s"weir lab $label"),
      head(s"weir lab $label", s"— $summary"),
      help("help").text("print this help"),
      opt[Unit]("quick").action((_, o) => o.copy(quick = true))
        .text(
          "virtual clock (TestControl), K = 20, 50 ms, 20 s, K halves at 8 s and returns at 14 s: exact and fast"
        ),
      opt[String]("clock").valueName("real|virtual")
        .validate(c =>
          if c == "real" || c == "virtual" then success
          else failure(s"--clock must be real or virtual, was: $c")
        )
        .action((c, o) => o.copy(clock = Some(if c == "real" then Clock.Real else Clock.Virtual)))
        .text("real (default) or virtual (default with --quick)"),
      opt[Int]("capacity").valueName("K")
        .validate(positive("--capacity"))
        .action((k, o) => o.copy(capacity = Some(k)))
        .text("the upstream's hidden capacity at the start (default 50; 20 with --quick)"),
      opt[String]("capacity-change").valueName("T:K").unbounded()
        .validate(s => Upstream.parseChange(s).map(_ => ()))
        .action((s, o) =>
          o.copy(changes = Some(o.changes.getOrElse(Vector.empty) :+ Upstream.parseChange(s).toOption.get))
        )
        .text("K becomes K at time T, e.g. 20s:25; repeatable (default: K/2 at 10 s, K again at 20 s)"),
      dur("latency").action((d, o) => o.copy(latency = Some(d)))
        .text("unloaded latency (default 10ms; 50ms with --quick)"),
      opt[String]("hard-cap").valueName("N|Fx")
        .validate(s => Upstream.HardCap.parse(s).map(_ => ()))
        .action((s, o) => o.copy(hardCap = Upstream.HardCap.parse(s).toOption.get))
        .text("refuse requests beyond N in flight, or F times the current K (default 2x)"),
      dur("error-latency").action((d, o) => o.copy(errorLatency = Some(d)))
        .text("how long a refused request takes to fail (default: the unloaded latency)"),
      dur("duration").action((d, o) => o.copy(duration = Some(d)))
        .text("how long each configuration runs (default 30s; 20s with --quick)"),
      opt[Int]("fixed").valueName("N").unbounded()
        .validate(positive("--fixed"))
        .action((n, o) => o.copy(fixed = o.fixed :+ n))
        .text("a fixed limit to compare; repeatable (default K/4, K, 4K)"),
      opt[String]("algorithm").valueName(algorithms.keys.toVector.sorted.mkString("|")).unbounded()
        .validate(a =>
          if algorithms.contains(a) then success
          else
            failure(s"--algorithm must be one of ${algorithms.keys.toVector.sorted.mkString(", ")}, was: $a")
        )
        .action((a, o) => o.copy(algorithms = o.algorithms :+ a))
        .text("an adaptive algorithm to run; repeatable (default: both)"),
      opt[Double]("tolerance").valueName("X")
        .validate(x =>
          if x >= 1 && !x.isInfinite then success else failure(s"--tolerance must be >= 1, was: $x")
        )
        .action((x, o) => o.copy(tolerance = x))
        .text(
          "the gradient's latency tolerance (default 1.0: any rise of the least latency shrinks the limit)"
        ),
      dur("every").action((d, o) => o.copy(every = d))
        .text("how often the limit and in-flight count are sampled (default 100ms)"),
      dur("settle-target").action((d, o) => o.copy(settleTarget = d))
        .text("how soon after a change of K the limit must have settled (default 3s)"),
      opt[String]("json").valueName("FILE").action((f, o) => o.copy(json = Some(Paths.get(f))))
        .text("write every result, the time series and the verdicts as JSON (default: none)"),
      opt[String]("chart").valueName("FILE.png").action((f, o) => o.copy(chart = Some(Paths.get(f))))
        .text(
          "draw the adaptive limits and their in-flight counts over time, with K and the hard cap (default: none)"
        ),
      opt[String]("html").valueName("FILE").action((f, o) => o.copy(html = Some(Paths.get(f))))
        .text(
          "write one self-contained HTML page: the settings, the table, the targets and the chart (default: none)"
        ),
      checkConfig(o => o.resolve.map(_ => ()).fold(failure, _ => success))
    )

  /** The settings, or `Left(None)` after `--help`, or `Left(Some(why))` for bad options (for tests). */
  def parse(args: List[String]): Either[Option[String], Settings] =
    CommandLine.parse(parser, args, Options()) match
      case CommandLine.Parsed.Ok(o) => o.resolve.left.map(Some(_))
      case CommandLine.Parsed.Help(_) => Left(None)
      case CommandLine.Parsed.Bad(why) => Left(Some(why))
