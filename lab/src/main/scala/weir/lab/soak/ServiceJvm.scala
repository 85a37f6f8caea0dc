package weir.lab.soak

import cats.effect.{Deferred, IO, Ref, Resource}
import cats.syntax.all.*
import weir.lab.ChildCommand

import java.io.{BufferedReader, InputStreamReader}
import java.nio.charset.StandardCharsets
import scala.concurrent.duration.*

/**
 * The [[SoakService]] JVM of a soak run: started on this JVM's class path, its heap samples gathered as
 * it prints them, stopped by closing its standard input. Released, it is SIGKILLed if still alive.
 */
final class ServiceJvm private (
    process: Process,
    readyGate: Deferred[IO, Either[String, Unit]],
    doneLine: Deferred[IO, Either[String, String]],
    samples: Ref[IO, Vector[(Double, Double)]]
):

  /** Waits until both sources run; fails if the service ended first. */
  def ready(timeout: FiniteDuration): IO[Unit] =
    readyGate.get.timeoutTo(
      timeout,
      IO.pure(Left(s"the soak service was not ready within $timeout"))
    ).flatMap {
      case Right(()) => IO.unit
      case Left(why) => IO.raiseError(new IllegalStateException(why))
    }

  def heap: IO[HeapSeries] = samples.get.map(HeapSeries(_))

  /** Closes its input, so that it drains and says `done`; returns the counts of that line. */
  def stop(timeout: FiniteDuration): IO[Map[String, Long]] =
    IO.blocking(process.getOutputStream.close()) *>
      doneLine.get.timeoutTo(
        timeout,
        IO.pure(Left(s"the soak service did not end within $timeout"))
      ).flatMap {
        case Right(line) => IO.pure(ServiceJvm.counts(line))
        case Left(why) => IO.raiseError(new IllegalStateException(why))
      } <* IO.blocking(process.waitFor(timeout.toSeconds, java.util.concurrent.TimeUnit.SECONDS))

object ServiceJvm:

  /** `key=value` pairs of a `done` line, the numbers only. */
  def counts(line: String): Map[String, Long] =
    line.split(' ').iterator.flatMap(_.split('=') match
      case Array(k, v) => v.toLongOption.map(k -> _)
      case _ => None).toMap

  def start(heapMiB: Int, args: List[String]): Resource[IO, ServiceJvm] =
    val command = ChildCommand("weir.lab.soak.SoakService", List(s"-Xmx${heapMiB}m", "-XX:+UseG1GC"), args)
    for
      process <- Resource.make(IO.blocking(
        new ProcessBuilder(command*)
          .redirectInput(ProcessBuilder.Redirect.PIPE)
          .redirectError(ProcessBuilder.Redirect.INHERIT)
          .start()
      ))(p => IO.blocking(p.destroyForcibly().waitFor()).void)
      ready <- Resource.eval(Deferred[IO, Either[String, Unit]])
      done <- Resource.eval(Deferred[IO, Either[String, String]])
      samples <- Resource.eval(Ref[IO].of(Vector.empty[(Double, Double)]))
      reader = new BufferedReader(new InputStreamReader(process.getInputStream, StandardCharsets.UTF_8))
      onLine = (line: String) =>
        line.split(' ').toList match
          case "ready" :: Nil => ready.complete(Right(())).void
          case "heap" :: t :: mib :: Nil =>
            (t.toDoubleOption, mib.toDoubleOption).tupled.fold(IO.println(s"soak service: $line"))(s =>
              samples.update(_ :+ s)
            )
          case "done" :: _ => done.complete(Right(line)).void
          case _ => IO.println(s"soak service: $line")
      ended = "the soak service ended before it said so (its standard error is above)"
      // the end of its output, or a read failing because it was killed, ends the reader
      loop = IO.blocking(Option(reader.readLine())).handleError(_ => None).flatMap {
        case Some(line) => onLine(line).as(true)
        case None => ready.complete(Left(ended)) *> done.complete(Left(ended)).as(false)
      }.iterateWhile(identity)
      _ <- loop.background
    yield new ServiceJvm(process, ready, done, samples)
