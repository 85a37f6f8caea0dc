package weir.lab

import cats.effect.{ExitCode, IO}
import fs2.{Chunk, Stream}
import scopt.OParser
import weir.*
import weir.cli.Command
import weir.cli.CommandLine.positive
import weir.otel.WeirMetrics

import java.lang.management.ManagementFactory
import scala.jdk.CollectionConverters.*

/**
 * `./weir lab heap`: many lazily generated no-op tasks through weir's engine, in this JVM, as fast as it
 * takes them: the memory check of the engine (time per task, peak heap). Run it with a small heap
 * (`JAVA_OPTS=-Xmx256m ./weir lab heap`) to see that memory does not grow with the number of tasks. The
 * soak experiment (`lab soak`) is another question: a durable worker and a Kafka source in a service JVM,
 * fed at a steady rate for minutes.
 */
object Heap extends Experiment with Command.Parsed[Heap.Options]:
  val label = "heap"
  val summary = "many lazily generated no-op tasks through weir's engine: time per task and peak heap"

  final case class Options(
      tasks: Long = 10_000_000L,
      limit: Int = 64,
      progress: Boolean = false,
      otel: Option[Int] = None
  )
  val defaults: Options = Options()

  val parser: OParser[Unit, Options] =
    val builder = OParser.builder[Options]
    import builder.*
    OParser.sequence(
      programName("weir lab heap"),
      head(s"weir lab heap — $summary"),
      help("help").text("print this help"),
      opt[Long]("tasks").valueName("N").validate(positive("--tasks")).action((n, o) => o.copy(tasks = n))
        .text(s"number of tasks (default ${defaults.tasks})"),
      opt[Int]("limit").valueName("N").validate(positive("--limit")).action((n, o) => o.copy(limit = n))
        .text(s"concurrency limit (default ${defaults.limit})"),
      OtelEndpoint.option(builder)((o, p) => o.copy(otel = Some(p))),
      opt[Unit]("progress").action((_, o) => o.copy(progress = true)).text("show a progress bar")
    )

  def execute(o: Options): IO[ExitCode] =
    OtelEndpoint.around(o.otel)(run(o.tasks, o.limit, o.progress, _)).as(ExitCode.Success)

  /** Runs it, reporting the run to `metrics` if given (see [[OtelEndpoint]]). */
  def run(
      tasks: Long,
      limit: Int,
      progress: Boolean,
      metrics: Option[WeirMetrics[IO]] = None
  ): IO[Unit] =
    // generated lazily, 1024 at a time: nothing but the buffer and the workers' tasks is ever in memory
    val source = Stream.unfoldChunk[IO, Long, Long](0L) { from =>
      Option.when(from < tasks)((Chunk.from(from until math.min(from + 1024, tasks)), from + 1024))
    }
    val pipeline = Pipeline(source)
      .process(_ => IO.unit)
      .withLimit(Limit.fixed(limit))
    for
      summary <- OtelEndpoint.reported(metrics, "heap")(pipeline.start).use { r =>
        if progress then Progress.console(r, Some(tasks)).surround(r.join) else r.join
      }
      heap <- IO(peakHeapMiB)
      maxHeap <- IO(Runtime.getRuntime.maxMemory / (1024 * 1024))
      _ <- IO.println(summary)
      _ <- IO.println(
        f"ns per task: ${summary.elapsed.toNanos.toDouble / tasks}%.0f; peak heap used: $heap MiB of $maxHeap MiB"
      )
      _ <-
        IO.raiseWhen(!summary.allSucceeded)(new IllegalStateException(s"not every task succeeded: $summary"))
    yield ()

  /** The largest heap occupancy seen by the collector's memory pools since the JVM started. */
  private def peakHeapMiB: Long =
    ManagementFactory.getMemoryPoolMXBeans.asScala
      .filter(_.getType == java.lang.management.MemoryType.HEAP)
      .map(_.getPeakUsage.getUsed)
      .sum / (1024 * 1024)
