package weir.postgres

import cats.effect.IO
import doobie.implicits.*
import weir.InvalidSettings
import weir.postgres.internal.Sql

import scala.concurrent.duration.*

class QueueDepthsSuite extends DbSuite:

  /**
   * Queue `a`: tasks 1-5 plain, 6 due in an hour, 7-9 of one ordering key; 1-3 claimed, 1 completed (kept),
   * 2 dead, 3 left running; 4 cancelled. Queue `b`: one task. The ids of `a`'s tasks.
   */
  private def plant(db: Database[IO]): IO[Vector[Long]] =
    val sql = new Sql(db.schema)
    val a = TaskQueue[IO, Int](db, "a")
    for
      plain <- a.enqueueMany((1 to 5).map(NewTask(_)))
      _ <- a.enqueue(NewTask(6, delay = 1.hour))
      _ <- a.enqueueMany((7 to 9).map(NewTask(_, orderingKey = Some("k"))))
      _ <- TaskQueue[IO, Int](db, "b").enqueue(NewTask(10))
      owner <- sql.register("w", 1000).transact(db.transactor)
      claimed <- sql.claim("a", owner, 3, 60000).map(_.rows).transact(db.transactor)
      _ = assertEquals(claimed.size, 3)
      _ <- sql.complete(Array(claimed(0).token), keep = true, keyed = false).transact(db.transactor)
      _ <- sql.fail(Array(claimed(1).token), Array("x"), Array(-1L)).transact(db.transactor)
      cancel <- TaskAdmin(db).tasks.cancel(plain(3).taskId)
      _ = assertEquals(cancel, Cancel.Cancelled)
    yield plain.map(_.taskId)

  private val all = FinishedState.values.toSet

  withDb("depths count each queue's tasks by state, and the finished states asked for only") { db =>
    for
      _ <- plant(db)
      some <- TaskAdmin(db).overview.depths()
      every <- TaskAdmin(db).overview.depths(all)
      none <- TaskAdmin(db).overview.depths(Set.empty)
    yield
      assertEquals(some.map(_.queue), Vector("a", "b"))
      val a = some(0)
      // 5 and the key's head are available; the delayed task scheduled; the key's two others waiting
      assertEquals((a.available, a.scheduled, a.waiting, a.running), (2L, 1L, 2L, 1L))
      assertEquals(a.finished, Map(FinishedState.Dead -> 1L, FinishedState.Cancelled -> 1L))
      assert(a.oldestAvailable.exists(_ >= Duration.Zero), a)
      assertEquals(
        some(1),
        QueueDepth(
          "b",
          1,
          0,
          0,
          0,
          Map(FinishedState.Dead -> 0L, FinishedState.Cancelled -> 0L),
          some(1).oldestAvailable
        )
      )
      assertEquals(
        every(0).finished,
        Map(FinishedState.Completed -> 1L, FinishedState.Dead -> 1L, FinishedState.Cancelled -> 1L)
      )
      assertEquals(none(0).finished, Map.empty[FinishedState, Long])
      assertEquals(none(0).copy(finished = a.finished, oldestAvailable = a.oldestAvailable), a)
  }

  withDb("a queue with finished tasks only is counted too") { db =>
    val sql = new Sql(db.schema)
    for
      _ <- TaskQueue[IO, Int](db, "done").enqueue(NewTask(1))
      owner <- sql.register("w", 1000).transact(db.transactor)
      claimed <- sql.claim("done", owner, 1, 60000).map(_.rows).transact(db.transactor)
      _ <- sql.fail(Array(claimed(0).token), Array("x"), Array(-1L)).transact(db.transactor)
      depths <- TaskAdmin(db).overview.depths()
    yield assertEquals(
      depths,
      Vector(QueueDepth(
        "done",
        0,
        0,
        0,
        0,
        Map(FinishedState.Dead -> 1L, FinishedState.Cancelled -> 0L),
        None
      ))
    )
  }

  /** Reads `depths` until `p` holds of its state, for at most 20 s. */
  private def awaitState(depths: QueueDepths[IO])(p: QueueDepths.State => Boolean): IO[QueueDepths.State] =
    depths.read.flatMap(s => if p(s) then IO.pure(s) else IO.sleep(20.millis) *> awaitState(depths)(p))
      .timeoutTo(20.seconds, depths.read.map(s => fail(s"no such state in 20 s; the last: $s")))

  withDb("the shared count: one reading per period, the latest kept, a failed count kept apart") { db =>
    QueueDepths.start(db, QueueDepths.Settings(every = 100.millis, finished = all)).use { depths =>
      for
        first <- awaitState(depths)(_.last.isDefined)
        _ <- plant(db)
        expected <- TaskAdmin(db).overview.depths(all)
        planted <- awaitState(depths)(_.last.exists(_.queues.map(_.copy(oldestAvailable = None)) ==
          expected.map(_.copy(oldestAvailable = None))))
        // the schema gone, every count fails: the last reading stays, the failures are counted
        _ <- TestDatabase.drop(db.schema)
        failing <- awaitState(depths)(_.failures >= 2)
      yield
        assertEquals(first.last.map(_.queues), Some(Vector.empty))
        assertEquals(first.failures, 0L)
        assert(planted.last.exists(r => !r.at.isBefore(first.last.get.at)), planted)
        assertEquals(
          failing.last.map(_.queues.map(_.copy(oldestAvailable = None))),
          Some(expected.map(_.copy(oldestAvailable = None)))
        )
        assert(failing.lastError.isDefined, failing)
    }
  }

  withDb("a period that is not positive is refused with its value") { db =>
    QueueDepths
      .start(db, QueueDepths.Settings(every = Duration.Zero))
      .use_
      .attempt
      .map {
        case Left(e: InvalidSettings) =>
          assert(e.getMessage.contains("every must be > 0, was: 0 days"), e.getMessage)
        case other => fail(s"expected an InvalidSettings, got $other")
      }
  }
