package weir.postgres.internal

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import munit.CatsEffectSuite
import weir.Streak

import scala.concurrent.duration.*

/** The scheduler's loop in virtual time: when each round runs, whatever the rounds say or do. */
class ScheduleTickerSuite extends CatsEffectSuite:

  test(
    "a round runs at once, then after the wait it returns, kept within 1 ms and checkEvery; a failure waits checkEvery"
  ) {
    // what each round returns: a wait in ms, or a failure
    val answers: Vector[Either[String, Long]] =
      Vector(Right(250L), Right(0L), Right(-5L), Right(5000L), Left("database down"), Right(40L))
    val program =
      for
        times <- Ref[IO].of(Vector.empty[FiniteDuration])
        left <- Ref[IO].of(answers)
        counters = new ScheduleTicker.Counters
        told <- Ref[IO].of(Vector.empty[String])
        streak <- Streak[IO](e => told.update(_ :+ s"began: ${e.getMessage}"), _ => told.update(_ :+ "ended"))
        round = IO.monotonic.flatMap(t => times.update(_ :+ t)) *>
          left.modify(a => (a.drop(1), a.headOption.getOrElse(Right(1000L)))).flatMap {
            case Right(ms) => IO.pure(ms.millis)
            case Left(error) => IO.raiseError(new RuntimeException(error))
          }
        faults = new Faults[IO](counters.error, streak)
        _ <- ScheduleTicker.rounds(round, checkEvery = 1.second, faults).surround(
          (IO.sleep(1.millis) *> times.get).iterateUntil(_.size >= answers.size)
        )
        seen <- times.get
        streakTold <- told.get
      yield (seen.take(answers.size), counters.errors.get, streakTold)
    TestControl.executeEmbed(program).map { (seen, errors, streakTold) =>
      val start = seen.head
      // 250 ms; 0 and -5 become 1 ms; 5 s becomes checkEvery; the failure waits checkEvery
      assertEquals(
        seen.map(_ - start),
        Vector(0.millis, 250.millis, 251.millis, 252.millis, 1252.millis, 2252.millis)
      )
      assertEquals(errors, 1L)
      // the loop tells the streak of a failed round; a round's own success is told by the round
      assertEquals(streakTold, Vector("began: database down"))
    }
  }
