package weir.lab

import cats.effect.{ExitCode, IO, Ref}
import cats.syntax.all.*
import fs2.Stream
import scopt.OParser
import weir.*
import weir.cli.Command
import weir.cli.CommandLine.positive
import weir.otel.WeirMetrics

import scala.concurrent.duration.*
import scala.util.Random
import scala.util.chaining.*

/**
 * `./weir lab example`: a small pipeline with a progress bar. Two producers feed a bounded buffer; handlers
 * take 1–20 ms and every 50th task fails into a dead-letter sink; the run is drained half-way through and
 * every task is accounted for.
 */
object Example extends Experiment with Command.Parsed[Example.Options]:
  val label = "example"
  val summary = "a small pipeline with a progress bar: two producers, a limit, dead letters, a drain"

  final case class Options(tasks: Int = 20000, limit: Int = 64, otel: Option[Int] = None)
  val defaults: Options = Options()

  val parser: OParser[Unit, Options] =
    val builder = OParser.builder[Options]
    import builder.*
    OParser.sequence(
      programName("weir lab example"),
      head(s"weir lab example — $summary"),
      help("help").text("print this help"),
      opt[Int]("tasks").valueName("N").validate(positive("--tasks")).action((n, o) => o.copy(tasks = n))
        .text(s"number of tasks (default ${defaults.tasks})"),
      opt[Int]("limit").valueName("N").validate(positive("--limit")).action((n, o) => o.copy(limit = n))
        .text(s"concurrency limit (default ${defaults.limit})"),
      OtelEndpoint.option(builder)((o, p) => o.copy(otel = Some(p)))
    )

  def execute(o: Options): IO[ExitCode] =
    OtelEndpoint.around(o.otel)(run(o.tasks, o.limit, _)).as(ExitCode.Success)

  /** Runs it, reporting the run to `metrics` if given (see [[OtelEndpoint]]). */
  def run(tasks: Int, limit: Int, metrics: Option[WeirMetrics[IO]] = None): IO[Unit] =
    val half = tasks / 2
    def producer(p: Int): Stream[IO, Int] =
      Stream.range(p * half, (p + 1) * half).chunkN(100).flatMap(c =>
        Stream.exec(IO.sleep(5.millis)) ++ Stream.chunk(c)
      )
    def handle(task: Int): IO[String] =
      IO(Random.between(1, 20)).flatMap(ms => IO.sleep(ms.millis)) *>
        IO.raiseError(
          new IllegalStateException(s"task $task is broken")
        ).whenA(task % 50 == 49).as(s"done $task")

    for
      deadLetters <- Ref.of[IO, Vector[Int]](Vector.empty)
      summary <- Pipeline(Source.partitioned(2)(producer))
        .process(handle)
        .withLimit(Limit.fixed(limit))
        .withBuffer(200)
        .withOrder(TaskOrder.unordered)
        .withFailurePolicy(FailurePolicy.deadLetter((task, _) => deadLetters.update(_ :+ task)))
        .withQueueWaits
        .start
        .pipe(OtelEndpoint.reported(metrics, "example"))
        .use { running =>
          Progress.console(running, total = Some(tasks.toLong)).surround {
            // let it run for a while, then drain: in-flight tasks get 1 s, the rest come back
            IO.sleep(1.second) *> running.drain(1.second)
          }
        }
      letters <- deadLetters.get
      _ <- IO.println(summary)
      _ <- IO.println(s"dead letters: ${letters.size}; returned unstarted: ${summary.unstarted.size}")
      _ <- IO.println(
        s"accounted: ${summary.succeeded} + ${summary.failed} + ${summary.notStarted} = ${summary.received} received"
      )
    yield ()
