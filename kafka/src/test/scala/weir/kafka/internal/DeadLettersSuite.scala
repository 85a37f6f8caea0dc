package weir.kafka.internal

import cats.effect.{Deferred, IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.CatsEffectSuite
import org.apache.kafka.common.KafkaException
import weir.Retry

import scala.concurrent.duration.*

/**
 * The one retry of a dead-letter write ([[DeadLetters.retried]]), the poller's and the failure policy's,
 * in virtual time: when each attempt runs, and how a write ends.
 */
class DeadLettersSuite extends CatsEffectSuite:

  private val retry = Retry.exponential(100.millis, maxAttempts = 4, jitter = Retry.Jitter.Off)

  /** What a write did: when each attempt ran, and how it ended (with the error's message). */
  private def write(failures: Int, retry: Retry, interrupted: IO[String]): IO[(Vector[Long], String)] =
    for
      attempts <- Ref[IO].of(Vector.empty[Long])
      attempt = IO.monotonic.flatMap(t =>
        attempts.modify(seen => (seen :+ t.toMillis, seen.size)).flatMap(n =>
          IO.raiseError[Unit](new RuntimeException(s"broker away ${n + 1}")).whenA(n < failures)
        )
      )
      result <- DeadLetters.retried(attempt, retry, interrupted)(
        stopped = (reason, cause) => new KafkaException(s"stopped: $reason, after ${cause.getMessage}"),
        spent = (n, cause) => new KafkaException(s"spent $n attempts, the last: ${cause.getMessage}")
      )
      times <- attempts.get
    yield (
      times,
      result match
        case Right(()) => "written"
        case Left(DeadLetters.NotWritten.Stopped(e)) => s"Stopped(${e.getMessage})"
        case Left(DeadLetters.NotWritten.Spent(e)) => s"Spent(${e.getMessage})"
    )

  test("a failed attempt is retried after each backoff, until one succeeds") {
    TestControl.executeEmbed(write(failures = 2, retry, IO.never)).map(seen =>
      assertEquals(seen, (Vector(0L, 100L, 300L), "written"))
    )
  }

  test("once the attempts are spent the write ends Spent, with their number and the last error") {
    TestControl.executeEmbed(write(failures = 10, retry, IO.never)).map(seen =>
      assertEquals(seen, (Vector(0L, 100L, 300L, 700L), "Spent(spent 4 attempts, the last: broker away 4)"))
    )
  }

  test("an interruption ends the backoff under way: the write ends Stopped, with its reason") {
    // the partition is revoked at 150 ms: the first backoff (100 ms) ends before; the second is cut then
    val program = Deferred[IO, String].flatMap(revoked =>
      (IO.sleep(150.millis) *> revoked.complete("partition revoked")).background.surround(
        write(failures = 10, retry, revoked.get).product(IO.monotonic.map(_.toMillis))
      )
    )
    TestControl.executeEmbed(program).map(seen =>
      assertEquals(
        seen,
        ((Vector(0L, 100L), "Stopped(stopped: partition revoked, after broker away 2)"), 150L)
      )
    )
  }

  test("an error the retry does not accept ends the write at once") {
    val never = retry.retryOn(_ => false)
    TestControl.executeEmbed(write(failures = 1, never, IO.never)).map(seen =>
      assertEquals(seen, (Vector(0L), "Spent(spent 1 attempts, the last: broker away 1)"))
    )
  }
