package weir.postgres

import cats.effect.{IO, Ref}
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/** [[KillableWorker.killOnce]] against plain child processes: when it stops, kills, and what it says. */
class KillOnceSuite extends CatsEffectSuite:

  private def child(script: String): IO[Process] = IO.blocking(new ProcessBuilder("sh", "-c", script).start())

  /** The process's state letter in `/proc` (`T`: stopped). */
  private def state(p: Process): IO[String] =
    IO.blocking(java.nio.file.Files.readString(java.nio.file.Path.of(s"/proc/${p.pid}/stat")))
      .map(_.split(' ')(2))

  test(
    "a victim that exits before it is ready fails the wait at once, naming what was awaited and its exit"
  ) {
    child("exit 3").flatMap { p =>
      IO.blocking(p.waitFor()) *>
        KillableWorker.killOnce(p, "the victim holds a claim", IO.pure(false), 1.minute)(identity).attempt
          .timeout(20.seconds)
          .map(result =>
            assertEquals(
              result.left.map(_.getMessage),
              Left(s"worker JVM ${p.pid} exited (3) before: the victim holds a claim")
            )
          )
    }
  }

  test(
    "the victim runs while the probe says no, is read again stopped when it says yes, and is killed stopped"
  ) {
    child("sleep 600").flatMap { p =>
      Ref[IO].of(Vector.empty[String]).flatMap { seen =>
        // the first two reads say no, the third yes: only the fourth, the confirmation, sees it stopped
        val probe = state(p).flatMap(s => seen.updateAndGet(_ :+ s)).map(_.size >= 3)
        KillableWorker.killOnce(p, "the third read", probe, 1.minute)(identity) *>
          seen.get.map { states =>
            assertEquals(states.map(_ == "T"), Vector(false, false, false, true))
            assert(!p.isAlive, "the victim still runs")
          }
      }
    }
  }
