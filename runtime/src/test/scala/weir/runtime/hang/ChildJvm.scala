package weir.runtime.hang

import cats.effect.{IO, Resource}

import java.nio.file.{Files, Path, Paths}
import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * Runs a `main` from the test classpath in a child JVM, so that a wedge or an out-of-memory cannot take
 * the test runner with it. The child is killed at `hardDeadline` (exit code `None`) or when the wait is
 * cancelled.
 */
object ChildJvm:

  final case class Result(exitCode: Option[Int], out: List[String], err: List[String])

  def run(
      mainClass: String,
      jvmFlags: List[String],
      args: List[String],
      hardDeadline: FiniteDuration
  ): IO[Result] =
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    val command = List(java, "--sun-misc-unsafe-memory-access=allow") ++ jvmFlags ++
      List("-cp", System.getProperty("java.class.path"), mainClass) ++ args
    outputFiles.use { (out, err) =>
      val child = Resource.make(
        IO.blocking(new ProcessBuilder(command*).redirectOutput(out.toFile).redirectError(err.toFile).start())
      )(p => IO.blocking(p.destroyForcibly().waitFor()).void)
      child
        .use(p =>
          IO.interruptible(Option.when(p.waitFor(hardDeadline.toMillis, TimeUnit.MILLISECONDS))(p.exitValue))
        )
        .flatMap(code => IO.blocking(Result(code, lines(out), lines(err))))
    }

  private def lines(file: Path): List[String] = Files.readAllLines(file).asScala.toList

  private val outputFiles: Resource[IO, (Path, Path)] =
    val create =
      IO.blocking((Files.createTempFile("weir-child", ".out"), Files.createTempFile("weir-child", ".err")))
    Resource.make(create)((out, err) => IO.blocking(List(out, err).foreach(Files.deleteIfExists)))
