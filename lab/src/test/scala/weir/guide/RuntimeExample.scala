package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*
import weir.runtime.{WeirApp, WeirRuntime}
import scala.concurrent.duration.*

// an application: the safe runtime comes with WeirApp (WeirApp for IOApp, WeirApp.Simple for IOApp.Simple)
object NightlyJob extends WeirApp.Simple:
  def run: IO[Unit] =
    Pipeline(Stream.range(0, 1000).covary[IO]).process(n => IO.sleep(1.milli).as(n)).run.void

// anywhere else (a test, a framework's thread): a runtime of your own, shut down when done
object RuntimeExample:
  def runOnce[A](job: IO[A]): A =
    val (runtime, shutdown) = WeirRuntime.unsafeCreate()
    try job.unsafeRunSync()(using runtime)
    finally shutdown()
