package weir.lab.requests

import cats.effect.{IO, Resource}

import java.io.{BufferedReader, InputStreamReader}
import java.nio.charset.StandardCharsets
import java.util.concurrent.TimeUnit

/**
 * Starts `weir.lab.Main` with `args` in a child JVM on this JVM's class path (the lab jar, or the test
 * class path), with `jvmFlags`. Each line of its standard output goes to `onLine`; its standard error is
 * this process's. Released, the child is destroyed (forcibly after 5 s) and waited for.
 */
object LabJvm:

  final class Child private[LabJvm] (process: Process):
    /** Waits for the child to exit; its exit code. */
    def exitCode: IO[Int] = IO.interruptible(process.waitFor())
    def pid: Long = process.pid

  def command(jvmFlags: List[String], args: List[String]): List[String] =
    weir.lab.ChildCommand("weir.lab.Main", jvmFlags, args)

  def start(jvmFlags: List[String], args: List[String], onLine: String => IO[Unit]): Resource[IO, Child] =
    val process = Resource.make(
      IO.blocking(
        new ProcessBuilder(command(jvmFlags, args)*)
          .redirectError(ProcessBuilder.Redirect.INHERIT)
          .redirectInput(ProcessBuilder.Redirect.PIPE)
          .start()
      )
    )(p =>
      IO.blocking {
        p.destroy()
        if !p.waitFor(5, TimeUnit.SECONDS) then
          val _ = p.destroyForcibly().waitFor()
      }
    )
    process.flatMap { p =>
      val reader = new BufferedReader(new InputStreamReader(p.getInputStream, StandardCharsets.UTF_8))
      def loop: IO[Unit] =
        IO.blocking(Option(reader.readLine())).flatMap {
          case Some(line) => onLine(line) *> loop
          case None => IO.unit
        }
      // released in reverse: the process is told to stop first, which ends the blocked readLine, so the
      // reader's cancellation can complete; then the process is waited for (and killed if it lingers)
      loop.background.flatMap(_ => Resource.onFinalize(IO.blocking(p.destroy()))).map(_ => new Child(p))
    }
