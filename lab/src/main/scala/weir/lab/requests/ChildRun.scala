package weir.lab.requests

import cats.effect.{IO, Ref, Resource}
import io.circe.parser.decode
import me.tongfei.progressbar.{ProgressBarBuilder, ProgressBarStyle}

import java.nio.file.{Files, Path}
import scala.concurrent.duration.*

/**
 * Runs an approach in a child JVM with a capped heap (`-Xmx`, `-XX:+ExitOnOutOfMemoryError`): the child
 * is `./weir lab requests --approach NAME --url URL ... --child-result FILE`, which prints a
 * `sample T IN_FLIGHT COMPLETED` line per sample and writes its [[RequestResult]] to FILE. If the child
 * runs out of heap, the result says so, with how far it got (its last sample) and the server's counts.
 */
object ChildRun:

  /** JVM exit code of `-XX:+ExitOnOutOfMemoryError`. */
  val OutOfMemoryExit = 3

  def sampleLine(s: Sample): String = s"sample ${s.tMs} ${s.inFlight} ${s.completed}"

  def parseSample(line: String): Option[Sample] =
    line.split(' ') match
      case Array("sample", t, i, c) => t.toLongOption.zip(i.toLongOption).zip(c.toLongOption).map {
          case ((t, i), c) => Sample(t, i, c)
        }
      case _ => None

  def run(
      approach: RequestApproach,
      setup: RequestRunner.Setup,
      server: ServerHandle,
      heapMiB: Int,
      clientArgs: List[String]
  ): IO[RequestResult] =
    val resultFile = Resource.make(IO.blocking(Files.createTempFile("weir-requests", ".json")))(f =>
      IO.blocking(Files.deleteIfExists(f)).void
    )
    val bar =
      if setup.progress then
        Resource.make(IO(Some(
          new ProgressBarBuilder().setTaskName(s"${approach.name} (child JVM)").setInitialMax(setup.n)
            .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(200).continuousUpdate().build()
        )))(b => IO(b.foreach(_.close())))
      else Resource.pure[IO, Option[me.tongfei.progressbar.ProgressBar]](None)
    (resultFile, bar).tupled.use { (file, bar) =>
      for
        samples <- Ref[IO].of(Vector.empty[Sample])
        before <- server.stats
        args = List(
          "lab",
          "requests",
          "--approaches",
          approach.name,
          "--server-url",
          server.baseUrl,
          "--child-result",
          file.toString,
          "--no-progress"
        ) ++ clientArgs
        flags = List(s"-Xmx${heapMiB}m", "-XX:+ExitOnOutOfMemoryError")
        onLine = (line: String) =>
          parseSample(line).fold(IO.unit)(s =>
            samples.update(_ :+ s) *> IO(bar.foreach(_.stepTo(s.completed).setExtraMessage(
              s" in flight ${s.inFlight}/${setup.concurrency}"
            ): Unit))
          )
        code <- LabJvm.start(
          flags,
          args,
          onLine
        ).use(_.exitCode.timeoutTo(setup.timeLimit + 60.seconds, IO.pure(-1)))
        result <-
          if code == 0 then read(file)
          else
            for
              seen <- samples.get
              after <- server.stats
              last = seen.lastOption.getOrElse(Sample(0, 0, 0))
            yield RequestResult(
              approach.name,
              if code == OutOfMemoryExit then "out of memory" else "failed",
              Some(
                if code == OutOfMemoryExit then
                  f"the child JVM (-Xmx${heapMiB}m) ran out of heap after ${last.completed}%,d requests"
                else if code == -1 then "the child JVM did not end in time and was killed"
                else s"the child JVM exited with code $code"
              ),
              setup.n,
              setup.concurrency,
              last.completed,
              0L,
              last.tMs.toDouble,
              setup.ideal.makespanMs.toDouble,
              setup.ideal.littleBoundPerSecond,
              seen.map(_.inFlight).maxOption.getOrElse(0L),
              after.peakInFlight,
              after.served - before.served,
              heapMiB.toLong,
              -1L,
              heapMiB.toLong,
              -1,
              -1L,
              after.cpuMs - before.cpuMs,
              // the child wrote no result: no latency, fill or overhead figures
              p50Ms = Double.NaN,
              p99Ms = Double.NaN,
              maxMs = Double.NaN,
              fillMs = Double.NaN,
              overheadMeanMs = Double.NaN,
              overheadP50Ms = Double.NaN,
              overheadP99Ms = Double.NaN,
              samples = seen
            )
      yield result
    }

  private def read(file: Path): IO[RequestResult] =
    IO.blocking(Files.readString(file)).flatMap(text =>
      IO.fromEither(decode[RequestResult](text).left.map(e =>
        new IllegalStateException(s"bad child result: $e")
      ))
    )

  extension [A, B](pair: (Resource[IO, A], Resource[IO, B]))
    private def tupled: Resource[IO, (A, B)] = pair._1.flatMap(a => pair._2.map(b => (a, b)))
