package weir.lab.kafka

import cats.effect.{IO, Resource}

import java.io.{BufferedReader, InputStreamReader}
import java.nio.charset.StandardCharsets
import java.nio.file.Path

/** Starts [[KafkaLabWorker]] consumer JVMs on this JVM's class path, and SIGKILLs them. */
object ConsumerJvm:

  final class Child private[ConsumerJvm] (val id: Int, process: Process):
    def alive: Boolean = process.isAlive

    /** SIGKILL, and waits for the process to be gone. */
    def kill: IO[Unit] = IO.blocking(process.destroyForcibly().waitFor()).void

  /**
   * Starts consumer `id` of `approach`; each line of its standard output goes to `onLine`, its standard
   * error to this process's, each line marked with its id. Released: SIGKILL if it is still alive.
   */
  def start(
      id: Int,
      approach: Approach,
      s: ConsumerSettings,
      target: Long,
      timeBoxMillis: Long,
      warmupMillis: Long,
      report: Option[Path],
      onLine: String => IO[Unit]
  ): Resource[IO, Child] =
    val command = weir.lab.ChildCommand(
      "weir.lab.kafka.KafkaLabWorker",
      List("-Xmx512m"),
      List(
        approach.name,
        s.bootstrap,
        s.topic,
        s.group,
        s.sleepMillis.toString,
        s.limit.toString,
        s.maxInFlight.toString,
        s.pollMillis.toString,
        target.toString,
        timeBoxMillis.toString,
        warmupMillis.toString,
        report.fold("-")(_.toString)
      )
    )
    Resource
      .make(IO.blocking(
        new ProcessBuilder(command*)
          .redirectInput(ProcessBuilder.Redirect.PIPE)
          .redirectError(ProcessBuilder.Redirect.INHERIT)
          .start()
      ))(p => IO.blocking(p.destroyForcibly().waitFor()).void)
      .flatMap { p =>
        val reader = new BufferedReader(new InputStreamReader(p.getInputStream, StandardCharsets.UTF_8))
        // the pipe is closed under the reader when the child is killed, which ends it like the end of output;
        // released in reverse order, the child is killed first, so that the reader's blocked read returns
        def loop: IO[Unit] =
          IO.blocking(Option(reader.readLine())).handleError(_ => None).flatMap {
            case Some(line) => onLine(line) *> loop
            case None => IO.unit
          }
        loop.background.flatMap(_ => Resource.onFinalize(IO.blocking(p.destroyForcibly().waitFor()).void))
          .map(_ => new Child(id, p))
      }
