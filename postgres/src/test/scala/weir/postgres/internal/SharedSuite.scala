package weir.postgres.internal

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*
import munit.CatsEffectSuite

class SharedSuite extends CatsEffectSuite:

  /** A value numbered by its opening, whose opens and closes are recorded. */
  private def counted(log: Ref[IO, Vector[String]], opened: Ref[IO, Int]): Resource[IO, Int] =
    Resource.make(opened.updateAndGet(_ + 1).flatTap(n => log.update(_ :+ s"open $n")))(n =>
      log.update(_ :+ s"close $n")
    )

  test("the first user opens the value, every user gets it, the last one to leave closes it") {
    (Ref[IO].of(Vector.empty[String]), Ref[IO].of(0)).flatMapN { (log, opened) =>
      Shared.resource[IO, Int].use { shared =>
        val use = shared.use(counted(log, opened))
        for
          seen <- (use, use, use).tupled.use((a, b, c) => shared.users.map(n => (Vector(a, b, c), n)))
          left <- shared.users
          again <- use.use(IO.pure)
          events <- log.get
        yield
          assertEquals(seen, (Vector(1, 1, 1), 3))
          assertEquals(left, 0)
          assertEquals(again, 2)
          assertEquals(events, Vector("open 1", "close 1", "open 2", "close 2"))
      }
    }
  }

  test("concurrent users open the value once") {
    (Ref[IO].of(Vector.empty[String]), Ref[IO].of(0)).flatMapN { (log, opened) =>
      Shared.resource[IO, Int].use { shared =>
        (1 to 20).toVector.parTraverse(_ => shared.use(counted(log, opened)).use(IO.pure)) *> log.get
      }.map(events => assertEquals(events.count(_.startsWith("open")), events.count(_.startsWith("close"))))
    }
  }

  test(
    "a failed open leaves nothing held and the next user opens again; the owner's release closes what is held"
  ) {
    (Ref[IO].of(Vector.empty[String]), Ref[IO].of(0)).flatMapN { (log, opened) =>
      for
        result <- Shared.resource[IO, Int].use { shared =>
          for
            failed <- shared.use(Resource.eval(IO.raiseError[Int](new RuntimeException("down")))).use_.attempt
            users <- shared.users
            // a user that never leaves: the owner's release closes its value
            _ <- shared.use(counted(log, opened)).allocated
          yield (failed.isLeft, users)
        }
        events <- log.get
      yield
        assertEquals(result, (true, 0))
        assertEquals(events, Vector("open 1", "close 1"))
    }
  }
