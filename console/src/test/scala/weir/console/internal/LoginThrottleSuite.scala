package weir.console.internal

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/** [[LoginThrottle]] in virtual time: attempts per address and window, the wait it names, and its bound. */
class LoginThrottleSuite extends CatsEffectSuite with ScalaCheckSuite:

  private def virtual[A](body: IO[A]): IO[A] = TestControl.executeEmbed(body)

  test("five attempts a minute per address; the sixth waits exactly until the window ends") {
    virtual {
      for
        throttle <- LoginThrottle[IO]()
        _ <- IO.sleep(5.seconds)
        first <- throttle.attempt("10.0.0.1")
        _ <- IO.sleep(10.seconds)
        more <- (1 to 4).toVector.traverse(_ => throttle.attempt("10.0.0.1"))
        sixth <- throttle.attempt("10.0.0.1")
        other <- throttle.attempt("10.0.0.2")
        _ <- IO.sleep(50.seconds - 1.nanosecond)
        last <- throttle.attempt("10.0.0.1")
        _ <- IO.sleep(1.nanosecond)
        again <- throttle.attempt("10.0.0.1")
      yield
        assertEquals(first, Right(()))
        assertEquals(more, Vector.fill(4)(Right(())))
        // the window opened at 5 s with the first attempt and ends at 65 s: 50 s after the sixth, at 15 s
        assertEquals(sixth, Left(50.seconds))
        assertEquals(other, Right(()), "another address has its own window")
        assertEquals(last, Left(1.nanosecond))
        assertEquals(again, Right(()), "a new window")
    }
  }

  test("a full map drops the addresses whose window has ended, then the oldest window") {
    virtual {
      for
        throttle <- LoginThrottle[IO](attempts = 1, window = 1.minute, maxAddresses = 2)
        _ <- throttle.attempt("a")
        _ <- IO.sleep(1.second)
        _ <- throttle.attempt("b")
        _ <- throttle.attempt("c") // full: a, the oldest window, goes
        aFree <- throttle.attempt("a") // a is new again, and b, now the oldest, goes
        bFree <- throttle.attempt("b")
        _ <- IO.sleep(2.minutes)
        _ <- throttle.attempt("d")
        size <- throttle.size
      yield
        assertEquals((aFree, bFree), (Right(()), Right(())))
        assertEquals(size, 1, "the ended windows were dropped")
    }
  }

  private val script = Gen.listOf(Gen.zip(Gen.oneOf("a", "b", "c", "d", "e"), Gen.choose(0L, 30L)))

  /** Runs `attempts` (an address and the seconds waited before it): each one's time and result, and the size. */
  private def play(attempts: List[(String, Long)], maxAddresses: Int) =
    virtual {
      LoginThrottle[IO](attempts = 3, window = 1.minute, maxAddresses = maxAddresses).flatMap { throttle =>
        attempts.traverse { (address, wait) =>
          IO.sleep(wait.seconds) *> (IO.monotonic, throttle.attempt(address), throttle.size).tupled
        }
      }
    }.unsafeRunSync()

  property("with room for every address: each result is a window's, opened by its first attempt") {
    Prop.forAll(script) { attempts =>
      val results = play(attempts, maxAddresses = 5)
      // the rule, as stated: a window opens at an attempt that finds none open, and holds three attempts
      val expected =
        attempts.zip(results).foldLeft((Map.empty[String, (FiniteDuration, Int)], Vector.empty[Any])) {
          case ((windows, out), ((address, _), (t, _, _))) =>
            windows.get(address).filter(_._1 + 1.minute > t) match
              case Some((start, n)) if n >= 3 => (windows, out :+ Left(start + 1.minute - t))
              case Some((start, n)) => (windows.updated(address, (start, n + 1)), out :+ Right(()))
              case None => (windows.updated(address, (t, 1)), out :+ Right(()))
        }._2
      assertEquals(results.map(_._2), expected.toList)
      Prop.passed
    }
  }

  property("with room for three addresses of five: at most three kept, and every wait within the window") {
    Prop.forAll(script) { attempts =>
      play(attempts, maxAddresses = 3).foreach { (_, result, size) =>
        assert(size <= 3, s"$size addresses kept")
        result.left.foreach(w => assert(w > Duration.Zero && w <= 1.minute, w.toString))
      }
      Prop.passed
    }
  }
