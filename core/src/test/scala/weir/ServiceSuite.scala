package weir

import cats.effect.{Deferred, IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/**
 * A service's loop in virtual time ([[Service]]): when each round runs, what its faults are told, and how
 * a release stops it.
 */
class ServiceSuite extends CatsEffectSuite:

  /** What a test saw: each round's start and each line its streak told, with the virtual time. */
  private final class Seen(val lines: Ref[IO, Vector[String]]):
    def note(line: String): IO[Unit] = IO.monotonic.flatMap(t => lines.update(_ :+ s"${t.toMillis} $line"))
    def streak: IO[Streak[IO]] =
      Streak[IO](e => note(s"began: ${e.getMessage}"), end => note(s"ended: ${end.errors} errors"))

  private def seen: IO[Seen] = Ref[IO].of(Vector.empty[String]).map(new Seen(_))

  /** A round that answers, in turn, each of `answers` (an error's message, or what comes next). */
  private def scripted(s: Seen, answers: Vector[Either[String, Service.Next]]): IO[IO[Service.Next]] =
    Ref[IO].of(answers).map(left =>
      s.note("round") *>
        left.modify(a => (a.drop(1), a.headOption.getOrElse(Right(Service.Next.Again)))).flatMap {
          case Right(next) => IO.pure(next)
          case Left(message) => IO.raiseError(new RuntimeException(message))
        }
    )

  private val failing = Service.Settings("rescue", 1.second, Service.Backoff(100.millis, 300.millis))

  test(
    "a periodic round runs after every period, the first one too, and a failed one is retried a period later"
  ) {
    val program =
      for
        s <- seen
        streak <- s.streak
        failures <- Ref[IO].of(1)
        round = s.note("round") *>
          failures.modify(n => (n - 1, n)).flatMap(n =>
            IO.raiseError(new RuntimeException("down")).whenA(n > 0)
          )
        _ <- Service.periodic(Service.Settings.periodic("heartbeat", 500.millis), streak)(round).surround(
          IO.sleep(1750.millis)
        )
        lines <- s.lines.get
      yield lines
    TestControl.executeEmbed(program).map(lines =>
      assertEquals(
        lines,
        Vector("500 round", "500 began: down", "1000 round", "1000 ended: 1 errors", "1500 round")
      )
    )
  }

  test(
    "a streak of failed rounds is told once when it begins and once when it ends, its waits doubling to max"
  ) {
    val answers = Vector(Left("a"), Left("b"), Left("c"), Left("d"), Right(Service.Next.Again), Left("e"))
    val program =
      for
        s <- seen
        streak <- s.streak
        round <- scripted(s, answers)
        _ <- Service.run(failing, streak)(round).surround(IO.sleep(1950.millis))
        lines <- s.lines.get
      yield lines
    TestControl.executeEmbed(program).map(lines =>
      assertEquals(
        lines,
        Vector(
          "0 round",
          "0 began: a", // then 100, 200, 300, 300 ms after each failure in a row
          "100 round",
          "300 round",
          "600 round",
          "900 round",
          "900 ended: 4 errors",
          // a success starts the count again: `every`, then `first` after the next failure
          "1900 round",
          "1900 began: e"
        )
      )
    )
  }

  test(
    "a round that fails after running at least the backoff's max starts a new count: a long session reopens after first"
  ) {
    // each round fails: at once, or after running `length` (a session that held for a while, then dropped)
    val lengths = Vector(0, 0, 0, 300, 1000, 0, 0, 299).map(_.millis)
    val program =
      for
        s <- seen
        left <- Ref[IO].of(lengths)
        round = s.note("round") *>
          left.modify(l => (l.drop(1), l.headOption.getOrElse(1.hour))).flatMap(IO.sleep) *>
          IO.raiseError[Service.Next](new RuntimeException("dropped"))
        _ <- Service.run(failing, Service.Faults.ignored[IO])(round).surround(IO.sleep(3400.millis))
        lines <- s.lines.get
      yield lines
    TestControl.executeEmbed(program).map(lines =>
      assertEquals(
        lines,
        Vector(
          "0 round", // fails at once: 100 ms
          "100 round", // again: 200 ms
          "300 round", // again: 300 ms (max)
          "600 round", // held 300 ms (= max) before failing: counted the first again, 100 ms
          "1000 round", // held 1 s: the first again, 100 ms
          "2100 round", // fails at once after it: 200 ms
          "2300 round", // 300 ms
          "2600 round", // held 299 ms, under max: still in the streak, 300 ms
          "3199 round"
        )
      )
    )
  }

  test("a round says when the next runs: After its wait, Again after every, Done never again") {
    val answers = Vector(
      Right(Service.Next.After(250.millis)),
      Right(Service.Next.After(Duration.Zero)),
      Right(Service.Next.Again),
      Right(Service.Next.Done)
    )
    val program =
      for
        s <- seen
        round <- scripted(s, answers)
        _ <- Service.run(failing.copy(firstAfter = 40.millis), Service.Faults.ignored[IO])(round).surround(
          IO.sleep(1.hour)
        )
        lines <- s.lines.get
      yield lines
    TestControl.executeEmbed(program).map(lines =>
      assertEquals(lines, Vector("40 round", "290 round", "290 round", "1290 round"))
    )
  }

  test("release cancels the round under way and returns once its finalizers have run") {
    val program =
      for
        s <- seen
        started <- Deferred[IO, Unit]
        round = started.complete(()) *> IO.never.onCancel(IO.sleep(300.millis) *> s.note("round's finalizer"))
        _ <-
          Service.run(failing, Service.Faults.ignored[IO])(round).surround(started.get *> IO.sleep(1.second))
        _ <- s.note("released")
        lines <- s.lines.get
      yield lines
    TestControl.executeEmbed(program).map(lines =>
      assertEquals(lines, Vector("1300 round's finalizer", "1300 released"))
    )
  }

  test("a finishing service is asked to end at release, and waited for until its work is done") {
    val program =
      for
        s <- seen
        stop <- Deferred[IO, Unit]
        // the work ends 200 ms after it is asked to
        round = IO.race(stop.get *> IO.sleep(200.millis), IO.sleep(1.second)).flatMap {
          case Left(_) => s.note("done").as(Service.Next.Done)
          case Right(_) => IO.pure(Service.Next.After(Duration.Zero))
        }
        settings = failing.copy(finishWithin = 1.second)
        _ <- Service.finishing(
          settings,
          Service.Faults.ignored[IO],
          s.note("asked") *> stop.complete(()).void
        )(round)
          .surround(IO.sleep(2500.millis))
        _ <- s.note("released")
        lines <- s.lines.get
      yield lines
    TestControl.executeEmbed(program).map(lines =>
      assertEquals(lines, Vector("2500 asked", "2700 done", "2700 released"))
    )
  }

  test("a finishing service that does not end within finishWithin is cancelled then") {
    val program =
      for
        s <- seen
        round = IO.never[Service.Next].onCancel(s.note("cancelled"))
        settings = failing.copy(finishWithin = 750.millis)
        _ <- Service.finishing(
          settings,
          Service.Faults.ignored[IO],
          s.note("asked")
        )(round).surround(IO.sleep(1.second))
        _ <- s.note("released")
        lines <- s.lines.get
      yield lines
    TestControl.executeEmbed(program).map(lines =>
      assertEquals(lines, Vector("1000 asked", "1750 cancelled", "1750 released"))
    )
  }

  test("a finishing service whose finish fails is cancelled all the same, and the release fails with it") {
    val program =
      for
        s <- seen
        round = IO.never[Service.Next].onCancel(s.note("cancelled"))
        settings = failing.copy(finishWithin = 750.millis)
        released <- Service.finishing(
          settings,
          Service.Faults.ignored[IO],
          s.note("asked") *> IO.raiseError(new IllegalStateException("no finish"))
        )(round).surround(IO.sleep(1.second)).attempt
        lines <- s.lines.get
      yield (released.left.map(_.getMessage), lines)
    TestControl.executeEmbed(program).map((released, lines) =>
      assertEquals(released, Left("no finish"))
      assertEquals(lines, Vector("1000 asked", "1000 cancelled"))
    )
  }

  test("bad settings fail the start with every bad value named, before any round runs") {
    val bad = Service.Settings(
      name = " ",
      every = -1.second,
      backoff = Service.Backoff(2.seconds, 1.second),
      firstAfter = -5.millis,
      finishWithin = Duration.MinusInf
    )
    for
      rounds <- Ref[IO].of(0)
      result <- Service.run(bad, Service.Faults.ignored[IO])(rounds.update(_ + 1).as(Service.Next.Again))
        .use_.attempt
      ran <- rounds.get
    yield
      assertEquals(ran, 0)
      result match
        case Left(e: InvalidSettings) =>
          assertEquals(e.settings, "Service.Settings of ' '")
          assertEquals(
            e.errors,
            List(
              "name must not be blank, was: ' '",
              "every must be >= 0, was: -1 seconds",
              "backoff: max must be >= first (2 seconds), was: 1 second",
              "firstAfter must be >= 0, was: -5 milliseconds",
              "finishWithin must be >= 0, was: Duration.MinusInf"
            )
          )
        case other => fail(s"expected InvalidSettings, got $other")
  }

  test("a backoff doubles from first to max, and a constant one never changes") {
    val b = Service.Backoff(50.millis, 5.seconds)
    assertEquals(
      (1L to 9L).map(b.after).toVector.map(_.toMillis),
      Vector(50L, 100, 200, 400, 800, 1600, 3200, 5000, 5000)
    )
    assertEquals(b.after(Long.MaxValue), 5.seconds)
    assertEquals(Service.Backoff.constant(1.second).after(40L), 1.second)
    assertEquals(Service.Backoff(Duration.Zero, 1.second).after(3L), Duration.Zero)
    assertEquals(Service.Backoff(-1.milli, 1.second).errors, List("first must be >= 0, was: -1 milliseconds"))
  }
