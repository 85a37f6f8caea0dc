package weir.lab.requests

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import scopt.{OEffect, OParser}
import weir.cli.{CommandLine, Durations}
import weir.cli.CommandLine.positive
import weir.lab.Experiment

import java.lang.management.ManagementFactory
import java.net.URI
import java.nio.file.{Files, Path, Paths}
import scala.concurrent.duration.*

/**
 * `./weir lab requests`: seed 002's experiment. N requests against the delay server with at most
 * `concurrency` in flight, by each approach in turn, each measured against the ideal schedule of the same
 * delays and against Little's law (see docs/lab/requests.md).
 */
object Requests extends Experiment:
  val label = "requests"
  val summary = "seed 002's experiment: N HTTP requests at bounded concurrency against a delay server"

  final case class Settings(
      n: Long = 100_000L,
      concurrency: Int = 5000,
      url: Option[String] = None,
      maxDelayMs: Long = 3000,
      seed: Long = 0L,
      approaches: Vector[RequestApproach] = RequestApproach.all,
      client: ClientKind = ClientKind.Jetty,
      server: ServerPlacement = ServerPlacement.Child,
      timeLimit: Option[FiniteDuration] = None,
      upFrontHeapMiB: Int = 256,
      json: Option[Path] = None,
      chart: Option[Path] = None,
      html: Option[Path] = None,
      progress: Boolean = true,
      childResult: Option[Path] = None,
      warmup: Long = 0L,
      warmupRuns: Int = 3
  ):
    /** The time limit given, or three times the ideal plus 30 s. */
    def limitFor(idealMs: Long): FiniteDuration = timeLimit.getOrElse((3 * idealMs + 30_000).millis)

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    OParser.sequence(
      programName("weir lab requests"),
      head("weir lab requests", "— N HTTP requests at bounded concurrency against a delay server (seed 002)"),
      help("help").text("print this help"),
      opt[Long]("tasks").valueName("N")
        .validate(positive("--tasks"))
        .action((n, s) => s.copy(n = n))
        .text(s"number of requests (default ${Settings().n})"),
      opt[Int]("limit").valueName("N")
        .validate(positive("--limit"))
        .action((c, s) => s.copy(concurrency = c))
        .text(s"requests in flight at most (default ${Settings().concurrency})"),
      opt[String]("server-url").valueName("URL")
        .validate(u => urlError(u).fold(success)(failure))
        .action((u, s) => s.copy(url = Some(u.stripSuffix("/"))))
        .text(
          "a running `weir lab serve` (default: start one on a free loopback port); its seed and max delay are used"
        ),
      Durations.opt(builder, "max-delay").validate(Durations.positive("--max-delay"))
        .validate(Durations.wholeMillis("--max-delay"))
        .action((d, s) => s.copy(maxDelayMs = d.toMillis))
        .text(
          s"the embedded server's delays are uniform on [0, max), in whole ms (default ${Durations.show(Settings().maxDelayMs.millis)})"
        ),
      opt[Long]("seed").valueName("N").action((n, s) => s.copy(seed = n))
        .text("the embedded server's seed (default 0)"),
      opt[Seq[String]]("approaches").valueName("a,b")
        .validate(names =>
          names.find(RequestApproach.byName(_).isEmpty) match
            case Some(bad) =>
              failure(
                s"--approaches: unknown approach '$bad' (known: ${RequestApproach.all.map(_.name).mkString(", ")})"
              )
            case None => if names.isEmpty then failure("--approaches needs at least one name") else success
        )
        .action((names, s) => s.copy(approaches = names.distinct.toVector.flatMap(RequestApproach.byName)))
        .text(
          s"only these approaches, in this order (default: all): ${RequestApproach.all.map(_.name).mkString(", ")}"
        ),
      opt[String]("client").valueName("jetty|jdk|ember")
        .validate(c => ClientKind.parse(c).fold(failure, _ => success))
        .action((c, s) => s.copy(client = ClientKind.parse(c).toOption.get))
        .text("the asynchronous client of weir (default jetty; see ADRs 0009 and 0011)"),
      opt[String]("server").valueName("child|same")
        .validate(c => ServerPlacement.parse(c).fold(failure, _ => success))
        .action((c, s) => s.copy(server = ServerPlacement.parse(c).toOption.get))
        .text("where the embedded server runs: a child JVM (default) or this JVM"),
      Durations.opt(builder, "time-limit").validate(Durations.positive("--time-limit"))
        .action((t, s) => s.copy(timeLimit = Some(t)))
        .text("stop an approach after this long (default: 3 × the ideal makespan + 30s)"),
      opt[Int]("up-front-heap").valueName("MIB")
        .validate(m => if m >= 16 then success else failure(s"--up-front-heap must be >= 16 MiB, was: $m"))
        .action((m, s) => s.copy(upFrontHeapMiB = m))
        .text("heap cap of the up-front approach's child JVM (default 256)"),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON (default: none)"),
      opt[String]("charts").valueName("DIR").action((f, s) => s.copy(chart = Some(Paths.get(f))))
        .text(
          "also draw requests in flight and completed over time, one PNG per approach, into DIR (default: none)"
        ),
      opt[String]("html").valueName("FILE").action((f, s) => s.copy(html = Some(Paths.get(f))))
        .text(
          "also write one self-contained HTML page: the parameters, the table and every approach's chart (default: none)"
        ),
      opt[Long]("warmup-tasks").valueName("N")
        .validate(n => if n >= 0 then success else failure(s"--warmup-tasks must be >= 0, was: $n"))
        .action((n, s) => s.copy(warmup = n))
        .text(
          "first run each in-process approach, unmeasured, on N requests, --warmup-runs times (default 0: no warm-up)"
        ),
      opt[Int]("warmup-runs").valueName("R")
        .validate(positive("--warmup-runs"))
        .action((r, s) => s.copy(warmupRuns = r))
        .text(
          "how many warm-up runs of --warmup-tasks requests (default 3: each ramp-up from idle to the limit warms the " +
            "code only a ramp-up runs; ADR 0016)"
        ),
      opt[Unit]("no-progress").action((_, s) => s.copy(progress = false)).text("no progress bar"),
      opt[String]("child-result").valueName("FILE").hidden()
        .action((f, s) => s.copy(childResult = Some(Paths.get(f))))
        .text("internal: run the one approach here and write its result to FILE"),
      checkConfig(s =>
        if s.childResult.isDefined && (s.url.isEmpty || s.approaches.size != 1) then
          failure("--child-result needs --server-url and exactly one of --approaches")
        else success
      )
    )

  /** Why `u` is not a usable server URL, if it is not. */
  def urlError(u: String): Option[String] =
    scala.util.Try(new URI(u)).toOption match
      case Some(uri) if uri.getScheme == "http" && uri.getHost != null && uri.getPort > 0 => None
      case _ => Some(s"--server-url must look like http://HOST:PORT, was: $u")

  /** The settings, if `args` are valid (for tests). */
  def parse(args: Seq[String]): Option[Settings] =
    CommandLine.parse(parser, args, Settings()) match
      case CommandLine.Parsed.Ok(s) => Some(s)
      case _ => None

  /** The parse and its error messages, without printing them (for tests). */
  def errors(args: Seq[String]): (Option[Settings], List[String]) =
    val (parsed, effects) = OParser.runParser(parser, args, Settings())
    (parsed, effects.collect { case OEffect.ReportError(message) => message })

  def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Settings())

  def run(args: List[String]): IO[ExitCode] =
    CommandLine.runWithCode(parser, args, Settings()) { s =>
      s.childResult.fold(run(s).as(ExitCode.Success))(file => runChild(s, file).as(ExitCode.Success))
    }

  /**
   * The embedded server's settings: enough connections for the concurrency, and no idle or header timeout
   * (its only client is this run, and each finite timeout costs a race per read, write and header parse:
   * ADR 0013); its connections are bounded by `maxConnections` and closed when the run ends.
   */
  def serverConfig(s: Settings): DelayServer.Config =
    DelayServer.Config(
      maxDelayMs = s.maxDelayMs,
      seed = s.seed,
      maxConnections = math.max(16384, s.concurrency + 1024),
      idleTimeout = Duration.Inf,
      headerTimeout = Duration.Inf
    )

  /** Runs every chosen approach and reports; the results, in order. */
  def run(s: Settings): IO[Vector[RequestResult]] =
    val server = s.url.fold(ServerHandle.embedded(serverConfig(s), s.server))(ServerHandle.at)
    server.use { server =>
      for
        stats <- server.stats
        ideal <- IO(RequestIdeal.ofServer(s.n, s.concurrency, stats.seed, stats.maxDelayMs))
        env = RequestsReport.Environment(
          s.n,
          s.concurrency,
          stats.maxDelayMs,
          stats.seed,
          s.client.label,
          s.url.getOrElse(s"embedded (${s.server.label} JVM)"),
          ideal.makespanMs,
          ideal.meanDelayMs,
          ideal.littleBoundPerSecond,
          Runtime.getRuntime.availableProcessors,
          System.getProperty("java.version"),
          ManagementFactory.getOperatingSystemMXBean.getSystemLoadAverage,
          s.warmup,
          s.warmupRuns
        )
        _ <- IO.println(env.describe)
        setup =
          RequestRunner.Setup(s.n, s.concurrency, s.client, s.limitFor(ideal.makespanMs), ideal, s.progress)
        results <- s.approaches.traverse { a =>
          val one = a.placement match
            case RequestApproach.Placement.ChildJvm =>
              ChildRun.run(a, setup, server, s.upFrontHeapMiB, childArgs(s, setup))
            case _ =>
              val warm = setup.copy(
                n = s.warmup,
                progress = false,
                ideal = RequestIdeal.ofServer(
                  s.warmup,
                  s.concurrency,
                  stats.seed,
                  stats.maxDelayMs
                )
              )
              // one asynchronous client for every run: the measured run starts with the JIT warm and
              // the connections the warm-up runs opened still open. Several warm-up runs, not one longer
              // one: the code only a ramp-up from idle to the limit runs (thousands of requests started at
              // once) is still being compiled after a single ramp-up (ADR 0016)
              RequestRunner.asyncClient(setup, server).use { async =>
                IO.whenA(s.warmup > 0)(
                  (1 to s.warmupRuns).toList.traverse_ { k =>
                    RequestRunner.run(a, warm, server, async).flatMap(r =>
                      IO.println(s"${a.name}: warm-up run $k of ${s.warmupRuns} (not measured): ${r.brief}")
                    )
                  }
                ) *> RequestRunner.run(a, setup, server, async)
              }
          one.flatTap(r => IO.println(RequestsReport.table(Vector(r))))
        }
        _ <- IO.println(s"\n${env.describe}\n${RequestsReport.table(results)}")
        _ <- s.json.traverse_(f => RequestsReport.writeJson(f, env, results) *> IO.println(s"JSON: $f"))
        _ <- s.chart.traverse_(d =>
          RequestsReport.writeCharts(d, env, results).flatMap(fs =>
            IO.println(s"charts: ${fs.mkString(", ")}")
          )
        )
        _ <- s.html.traverse_(f => RequestsReport.writeHtml(f, env, results) *> IO.println(s"HTML: $f"))
      yield results
    }

  private def childArgs(s: Settings, setup: RequestRunner.Setup): List[String] =
    List(
      "--tasks",
      s.n.toString,
      "--limit",
      s.concurrency.toString,
      "--client",
      s.client.label,
      "--time-limit",
      Durations.show(setup.timeLimit.toMillis.max(1).millis)
    )

  /** In the child JVM: the one approach, here, its samples on standard output, its result in `file`. */
  private def runChild(s: Settings, file: Path): IO[Unit] =
    ServerHandle.at(s.url.get).use { server =>
      for
        stats <- server.stats
        ideal <- IO(RequestIdeal.ofServer(s.n, s.concurrency, stats.seed, stats.maxDelayMs))
        setup = RequestRunner.Setup(
          s.n,
          s.concurrency,
          s.client,
          s.limitFor(ideal.makespanMs),
          ideal,
          progress = false,
          onSample = sample => IO.println(ChildRun.sampleLine(sample))
        )
        result <- RequestRunner.run(s.approaches.head, setup, server)
        _ <- IO.blocking(Files.writeString(file, result.toJson.noSpaces)).void
      yield ()
    }
