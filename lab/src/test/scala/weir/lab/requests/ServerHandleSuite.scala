package weir.lab.requests

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/** Waiting for the server to empty between two runs, in virtual time. */
class ServerHandleSuite extends CatsEffectSuite:

  /** `quiesce` on counts read one after another (the last one repeats); its result and the time it took. */
  private def quiesce(counts: List[Long], within: FiniteDuration): IO[(Long, FiniteDuration, Int)] =
    TestControl.executeEmbed(
      for
        left <- Ref[IO].of(counts)
        reads <- Ref[IO].of(0)
        read = reads.update(_ + 1) *> left.modify {
          case n :: Nil => (List(n), n)
          case n :: rest => (rest, n)
          case Nil => (Nil, 0L)
        }
        start <- IO.monotonic
        result <- ServerHandle.quiesce(read, within)
        end <- IO.monotonic
        n <- reads.get
      yield (result, end - start, n)
    )

  test("returns at once when the server is already empty") {
    quiesce(List(0L), 1.second).assertEquals((0L, Duration.Zero, 1))
  }

  test("polls every 50 ms until in flight reads 0") {
    quiesce(List(3L, 2L, 1L, 0L), 1.second).assertEquals((0L, 150.millis, 4))
  }

  test("gives up after `within` and returns the last count") {
    // reads at 0, 50, …, 1000 ms: the one at 1000 ms is past the limit
    quiesce(List(7L), 1.second).assertEquals((7L, 1.second, 21))
  }
