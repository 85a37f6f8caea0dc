package weir.lab

import cats.effect.IO
import fs2.{Chunk, Stream}
import weir.*
import weir.otel.WeirMetrics

import java.lang.management.ManagementFactory
import scala.jdk.CollectionConverters.*

/**
 * Many lazily generated no-op tasks through weir: the memory check of the engine. Run it with a small heap
 * (`JAVA_OPTS=-Xmx256m ./weir soak`) to see that memory does not grow with the number of tasks.
 */
object Soak:

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
      summary <- OtelEndpoint.reported(metrics, "soak")(pipeline.start).use { r =>
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
