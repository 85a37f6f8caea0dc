package weir

import cats.effect.{ExitCode, IO, IOApp}
import fs2.{Chunk, Stream}

/**
 * `MemoryProbe <tasks>`: pushes that many lazily generated no-op tasks through weir and prints
 * `OK succeeded=<n>`; run by [[MemorySuite]] in a child JVM with a small heap.
 */
object MemoryProbe extends IOApp:
  def run(args: List[String]): IO[ExitCode] =
    val tasks = args.head.toLong
    val source = Stream.unfoldChunk[IO, Long, Long](0L) { from =>
      Option.when(from < tasks)((Chunk.from(from until math.min(from + 4096, tasks)), from + 4096))
    }
    Pipeline(source).process(_ => IO.unit).withLimit(Limit.fixed(64)).run.flatMap { s =>
      if s.allSucceeded then IO.println(s"OK succeeded=${s.succeeded}").as(ExitCode.Success)
      else IO.println(s"FAILED $s").as(ExitCode.Error)
    }
