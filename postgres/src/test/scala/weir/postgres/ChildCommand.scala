package weir.postgres

import cats.effect.IO

import java.io.BufferedReader
import java.lang.management.ManagementFactory
import java.nio.file.Paths
import java.util.concurrent.atomic.AtomicBoolean
import scala.concurrent.duration.FiniteDuration
import scala.jdk.CollectionConverters.*

/**
 * The command line of a child JVM a suite starts (a worker or a scheduler to SIGKILL, a process that
 * migrates): `mainClass` on this JVM's Java and class path, with at most `heapMiB` of heap.
 *
 * A child gets this JVM's JIT setting (the build's `weir.test.jit`: C1 only). It runs a few seconds of
 * mostly cold code, as a suite does, so C2's compilations would cost more CPU than they save; what the
 * suites check of a child (what it ran, what it left, what was rescued from it) does not depend on it.
 */
object ChildCommand:

  def apply(mainClass: String, heapMiB: Int, args: List[String]): List[String] =
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    List(java, "--sun-misc-unsafe-memory-access=allow") ++ jit ++
      List(s"-Xmx${heapMiB}m", "-cp", System.getProperty("java.class.path"), mainClass) ++ args

  /**
   * `read` of the child's output lines (`out`, the output of `p`), on a blocking thread. A read of a pipe
   * cannot be interrupted, so the wait is bounded by killing the child: one that has not let `read` return
   * within `within` is SIGKILLed, which ends its output, and the call fails saying so (rather than hanging
   * the suite on a child that neither starts nor exits).
   */
  def reading[A](
      p: Process,
      out: BufferedReader,
      within: FiniteDuration
  )(read: Iterator[String] => A): IO[A] =
    IO(new AtomicBoolean(false)).flatMap { killed =>
      val watchdog = IO.sleep(within) *> IO.blocking { killed.set(true); p.destroyForcibly() }.void
      // whatever `read` made of the output the kill cut short, the call fails: it never saw what it awaited
      watchdog.background
        .surround(IO.blocking(read(Iterator.continually(out.readLine()).takeWhile(_ != null))))
        .attempt
        .flatMap(result =>
          // a killed child's output ends before the system has reaped it: wait for its exit, so that the
          // call fails only once the child is gone
          if killed.get then
            IO.blocking(p.waitFor()) *> IO.raiseError(new IllegalStateException(
              s"child killed: it said nothing awaited within $within",
              result.left.toOption.orNull
            ))
          else IO.fromEither(result)
        )
    }

  private lazy val jit: List[String] =
    ManagementFactory.getRuntimeMXBean.getInputArguments.asScala.toList.filter(_.startsWith(
      "-XX:TieredStopAtLevel"
    ))
