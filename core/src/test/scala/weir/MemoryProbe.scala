package weir

import cats.effect.{ExitCode, IO, IOApp}
import fs2.{Chunk, Stream}

import scala.util.control.NoStackTrace

/**
 * `MemoryProbe <tasks> [fail]`: pushes that many lazily generated no-op tasks through weir and prints
 * `OK succeeded=<n>`; with `fail`, every task fails and it prints `OK failed=<n> kept=<failures kept>`. Run
 * by [[MemorySuite]] in a child JVM with a small heap.
 */
object MemoryProbe extends IOApp:
  private object Boom extends RuntimeException("boom") with NoStackTrace

  def run(args: List[String]): IO[ExitCode] =
    val tasks = args.head.toLong
    val failing = args.drop(1).headOption.contains("fail")
    val source = Stream.unfoldChunk[IO, Long, Long](0L) { from =>
      Option.when(from < tasks)((Chunk.from(from until math.min(from + 4096, tasks)), from + 4096))
    }
    val handler: Long => IO[Unit] = if failing then _ => IO.raiseError(Boom) else _ => IO.unit
    Pipeline(source).process(handler).withLimit(Limit.fixed(64)).run.flatMap { s =>
      if !failing && s.allSucceeded then IO.println(s"OK succeeded=${s.succeeded}").as(ExitCode.Success)
      else if failing && s.failed == tasks && s.received == tasks then
        IO.println(s"OK failed=${s.failed} kept=${s.failures.size}").as(ExitCode.Success)
      else IO.println(s"FAILED $s").as(ExitCode.Error)
    }
