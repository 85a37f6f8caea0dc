package weir.lab

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import fs2.Stream
import weir.*
import weir.otel.WeirMetrics

import scala.concurrent.duration.*
import scala.util.Random
import scala.util.chaining.*

/**
 * The README's example, runnable: two producers feed a bounded buffer; handlers take 1–20 ms and every
 * 50th task fails into a dead-letter sink; the run is drained half-way through and every task is
 * accounted for.
 */
object Example:

  /** Runs it, reporting the run to `metrics` if given (see [[OtelEndpoint]]). */
  def run(tasks: Int, limit: Int, metrics: Option[WeirMetrics[IO]] = None): IO[Unit] =
    val half = tasks / 2
    def producer(p: Int): Stream[IO, Int] =
      Stream.range(p * half, (p + 1) * half).chunkN(100).flatMap(c =>
        Stream.exec(IO.sleep(5.millis)) ++ Stream.chunk(c)
      )
    def handle(task: Int): IO[String] =
      IO(Random.between(1, 20)).flatMap(ms => IO.sleep(ms.millis)) *>
        IO.raiseError(
          new IllegalStateException(s"task $task is broken")
        ).whenA(task % 50 == 49).as(s"done $task")

    for
      deadLetters <- Ref.of[IO, Vector[Int]](Vector.empty)
      summary <- Pipeline(Source.partitioned(2)(producer))
        .process(handle)
        .withLimit(Limit.fixed(limit))
        .withBuffer(200)
        .withOrder(TaskOrder.unordered)
        .withFailurePolicy(FailurePolicy.deadLetter((task, _) => deadLetters.update(_ :+ task)))
        .withQueueWaits
        .start
        .pipe(OtelEndpoint.reported(metrics, "example"))
        .use { running =>
          Progress.console(running, total = Some(tasks.toLong)).surround {
            // let it run for a while, then drain: in-flight tasks get 1 s, the rest come back
            IO.sleep(1.second) *> running.drain(1.second)
          }
        }
      letters <- deadLetters.get
      _ <- IO.println(summary)
      _ <- IO.println(s"dead letters: ${letters.size}; returned unstarted: ${summary.unstarted.size}")
      _ <- IO.println(
        s"accounted: ${summary.succeeded} + ${summary.failed} + ${summary.notStarted} = ${summary.received} received"
      )
    yield ()
