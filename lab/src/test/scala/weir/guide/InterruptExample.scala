package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*

import scala.concurrent.duration.*

object InterruptExample:
  // a task someone may stop: refused if told before it starts, interrupted if told while it runs
  final class Export(val name: String) extends Interruptible:
    val stop = new Interruption
    def tryStart(): Option[String] = stop.requested
    def onInterrupt(interrupt: String => Unit): () => Unit = stop.onInterrupt(interrupt)

  def write(e: Export): IO[Unit] = IO.sleep(10.seconds).onCancel(IO.println(s"${e.name}: cleaned up"))

  val exports: List[Export] = List("daily", "weekly", "yearly").map(Export(_))

  // "weekly" is stopped 1 s into its run: its handler is cancelled, its finalizer runs, and it ends
  // Failed(TaskInterrupted("the user stopped it"), Interrupted), neither retried nor handed to the policy
  val run: IO[Summary[Export]] =
    (IO.sleep(1.second) *> IO(exports(1).stop.request("the user stopped it"))).start *>
      Pipeline(Source.refusable(Stream.emits(exports).covary[IO]))
        .process(write)
        .withLimit(Limit.fixed(3))
        .withRetry(Retry.exponential(1.second, maxAttempts = 3))
        .run
