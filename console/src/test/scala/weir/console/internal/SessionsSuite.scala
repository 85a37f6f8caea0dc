package weir.console.internal

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/** [[Sessions]] in virtual time: a session's life ends at its lifetime or its logout, and the store is bounded. */
class SessionsSuite extends CatsEffectSuite with ScalaCheckSuite:

  private def virtual[A](body: IO[A]): IO[A] = TestControl.executeEmbed(body)

  test("a session is found until exactly its lifetime after its login, and never again") {
    virtual {
      for
        sessions <- Sessions[IO](2.hours)
        _ <- IO.sleep(10.minutes)
        s <- sessions.open("ada")
        _ <- IO.sleep(2.hours - 1.nanosecond)
        last <- sessions.find(s.id)
        _ <- IO.sleep(1.nanosecond)
        gone <- sessions.find(s.id)
        kept <- sessions.size
      yield
        assertEquals(s.expiresAt, 10.minutes + 2.hours)
        assertEquals(last.map(_.operator), Some("ada"))
        assertEquals(gone, None)
        assertEquals(kept, 0, "the expired session is dropped when it is looked for")
    }
  }

  test("logging out ends a session at once; the other sessions go on") {
    virtual {
      for
        sessions <- Sessions[IO](1.hour)
        a <- sessions.open("ada")
        b <- sessions.open("bob")
        _ <- sessions.close(a.id)
        foundA <- sessions.find(a.id)
        foundB <- sessions.find(b.id)
        _ <- sessions.close("no-such-session")
      yield
        assertEquals(foundA, None)
        assertEquals(foundB.map(_.operator), Some("bob"))
    }
  }

  test("ids are 256 random bits in hex, each different; a label is a digest that does not reveal the id") {
    virtual {
      Sessions[IO](1.hour).flatMap(s => (1 to 100).toVector.traverse(_ => s.open("ada"))).map { all =>
        assertEquals(all.map(_.id).distinct.size, 100)
        assert(all.forall(_.id.matches("[0-9a-f]{64}")), all.head.id)
        assert(all.forall(s => s.label.length == 12 && !s.id.contains(s.label)), all.head)
        assertEquals(all.map(_.label), all.map(s => Sessions.label(s.id)))
      }
    }
  }

  test("a full store drops the expired sessions first, then the one that expires first") {
    virtual {
      for
        sessions <- Sessions[IO](1.hour, max = 3)
        a <- sessions.open("a")
        _ <- IO.sleep(1.minute)
        b <- sessions.open("b")
        c <- sessions.open("c")
        d <- sessions.open("d") // full: a, the oldest, goes
        afterD <- Vector(a, b, c, d).traverse(s => sessions.find(s.id).map(_.isDefined))
        _ <- IO.sleep(1.hour) // b, c and d have expired
        e <- sessions.open("e")
        size <- sessions.size
      yield
        assertEquals(afterD, Vector(false, true, true, true))
        assertEquals(size, 1)
        assert(e.operator == "e")
    }
  }

  private enum Op:
    case Open
    case Close(which: Int)
    case Wait(d: FiniteDuration)

  private val ops: Gen[List[Op]] = Gen.listOf(
    Gen.frequency(
      3 -> Gen.const(Op.Open),
      1 -> Gen.choose(0, 20).map(Op.Close(_)),
      2 -> Gen.choose(0L, 40L).map(m => Op.Wait(m.minutes))
    )
  )

  property("whatever the logins, logouts and waits: at most max kept, and no session found past its end") {
    Prop.forAll(ops) { script =>
      val lifetime = 1.hour
      val run = virtual {
        Sessions[IO](lifetime, max = 4).flatMap { sessions =>
          script.foldLeftM(Vector.empty[(Sessions.Session, Boolean)]) { (opened, op) =>
            val step = op match
              case Op.Open => sessions.open("x").map(s => opened :+ (s -> false))
              case Op.Close(i) if opened.nonEmpty =>
                val (s, _) = opened(i % opened.size)
                sessions.close(s.id).as(opened.updated(i % opened.size, s -> true))
              case Op.Close(_) => IO.pure(opened)
              case Op.Wait(d) => IO.sleep(d).as(opened)
            step.flatTap { now =>
              (
                sessions.size,
                IO.monotonic,
                now.traverse((s, closed) => sessions.find(s.id).map(f => (s, closed, f)))
              )
                .flatMapN { (size, t, found) =>
                  IO {
                    assert(size <= 4, s"$size sessions kept")
                    found.foreach { (s, closed, f) =>
                      if closed || s.expiresAt <= t then assertEquals(f, None, s"$s at $t")
                    }
                  }
                }
            }
          }
        }
      }
      run.unsafeRunSync(): Unit
      Prop.passed
    }
  }
