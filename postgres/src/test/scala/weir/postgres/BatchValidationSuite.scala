package weir.postgres

import cats.effect.IO
import doobie.*
import weir.InvalidSettings
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * What the operations of [[Batches]] refuse, each error naming the value, and that a refused call leaves
 * nothing behind: an unknown batch, an enqueue into a closed batch (also when the close commits while the
 * enqueue runs), bad tasks, callbacks and arguments, a queue of another schema.
 */
class BatchValidationSuite extends DbSuite:

  private def failure[A](io: IO[A]): IO[Throwable] =
    io.attempt.map(_.swap.getOrElse(fail("expected a failure")))

  withDb(
    "an unknown batch is refused by add, close and cancel, naming its id and the schema; progress is None"
  ) {
    db =>
      val batches = Batches(db)
      val q = TaskQueue[IO, String](db, "q")
      val unknown = BatchId(4711)
      for
        add <- failure(batches.add(unknown, q, Vector(NewTask("x"))))
        graph <- failure(batches.addGraph(unknown, TaskGraph.empty.add("x", q, NewTask("x"))))
        close <- failure(batches.close(unknown))
        cancel <- failure(batches.cancel(unknown))
        read <- batches.progress(unknown)
        left <- Rows.count(db, "tasks")
      yield
        val message =
          s"unknown batch 4711: schema '${db.schema.name}' holds no batch with this id (never opened there, or " +
            "pruned after it ended)"
        List(add, graph, close, cancel).foreach {
          case e: UnknownBatch =>
            assertEquals(e.getMessage, message)
            assertEquals(e.batch, unknown)
          case other => fail(s"expected UnknownBatch, got $other")
        }
        assertEquals(read, None)
        assertEquals(left, 0L)
  }

  withDb("an enqueue into a closed batch is refused, naming the batch and its close, and inserts nothing") {
    db =>
      val batches = Batches(db)
      val q = TaskQueue[IO, String](db, "q")
      for
        batch <- batches.open(TaskQueue[IO, String](db, "done"), NewTask("done"))
        closed <- batches.close(batch)
        add <- failure(batches.add(batch, q, Vector(NewTask("late"))))
        graph <- failure(batches.addGraph(batch, TaskGraph.empty.add("late", q, NewTask("late"))))
        members <- Rows.count(db, "tasks", "batch IS NOT NULL")
      yield
        List(add, graph).foreach {
          case e: BatchClosed =>
            assertEquals(e.batch, batch)
            assertEquals(Some(e.closedAt), closed.closedAt)
            assertEquals(
              e.getMessage,
              s"batch ${batch.value} is closed (since ${e.closedAt}): no member can be added to it; open another batch"
            )
          case other => fail(s"expected BatchClosed, got $other")
        }
        assertEquals(members, 0L)
  }

  withDb(
    "a close that commits while an enqueue into the batch runs makes the enqueue fail as BatchClosed, its members rolled back"
  ) { db =>
    val batches = Batches(db)
    val q = TaskQueue[IO, String](db, "q")
    val (jdbc, props) = DatabaseConfig.toJdbc(TestDatabase.url)
    for
      batch <- batches.open(TaskQueue[IO, String](db, "done"), NewTask("done"))
      // a transaction of its own closes the batch and holds the batch's lock until it commits
      closer <- IO.blocking {
        val c = java.sql.DriverManager.getConnection(jdbc, props)
        c.setAutoCommit(false)
        val st = c.createStatement()
        st.execute(s"SELECT * FROM ${db.schema("batch_step")}(${batch.value}, 0, 0, 0, 0, true)"): Unit
        st.close()
        c
      }
      adding <- batches.add(batch, q, Vector(NewTask("a"), NewTask("b"))).attempt.start
      // the enqueue checked the batch open (the close is not committed), inserted, and waits for the lock
      _ <- Eventually.until(
        "the enqueue waiting for the batch's lock",
        Rows.query[Long](
          "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() " +
            s"AND query LIKE '%${db.schema("batch_step")}%'"
        ).map(_.head),
        30.seconds
      )(_ == 1L)
      _ <- IO.blocking { closer.commit(); closer.close() }
      outcome <- adding.joinWithNever
      members <- Rows.count(db, "tasks", "batch IS NOT NULL")
      now <- batches.progress(batch)
    yield
      outcome match
        case Left(e: BatchClosed) =>
          assertEquals(e.batch, batch)
          assertEquals(now.flatMap(_.closedAt), Some(e.closedAt))
        case other => fail(s"expected BatchClosed, got $other")
      assertEquals(members, 0L)
      assertEquals(now.map(p => (p.members, p.ended)), Some((0L, true)))
  }

  withDb(
    "a callback with a unique key, parents, bad values or a queue of another schema is refused, naming each"
  ) {
    db =>
      TestDatabase.migrated.use { other =>
        val batches = Batches(db)
        val done = TaskQueue[IO, String](db, "done")
        val checked =
          for
            bad <- failure(
              batches.open(
                done,
                NewTask("x", maxAttempts = 0, uniqueKey = Some("k"), after = Vector(After.completed(3L)))
              )
            )
            elsewhere <- failure(batches.open(TaskQueue[IO, String](other, "done"), NewTask("x")))
            unnamed <- failure(batches.open(TaskQueue[IO, String](db, ""), NewTask("x")))
            left <- Rows.count(db, "tasks")
            opened <- Rows.count(db, "batches")
          yield
            bad match
              case e: InvalidSettings =>
                assertEquals(e.settings, "Batches.open")
                assertEquals(
                  e.errors,
                  List(
                    "maxAttempts must be >= 1, was: 0",
                    "a callback has no uniqueKey, was: 'k': a batch's callback is its own task",
                    "a callback waits for its batch only, was after: 3"
                  )
                )
              case other => fail(s"expected InvalidSettings, got $other")
            elsewhere match
              case e: InvalidSettings =>
                assertEquals(
                  e.errors,
                  List(
                    s"queue 'done' is of schema '${other.schema}', not of schema '${db.schema}' of the batches: a " +
                      "batch's tasks are of its schema"
                  )
                )
              case other => fail(s"expected InvalidSettings, got $other")
            unnamed match
              case e: InvalidSettings => assertEquals(e.errors, List("queue name must not be empty, was: ''"))
              case other => fail(s"expected InvalidSettings, got $other")
            assertEquals((left, opened), (0L, 0L))
        checked.guarantee(TestDatabase.drop(other.schema))
      }
  }

  withDb("bad members are refused before anything is written, each named by its index; so is a bad graph") {
    db =>
      val batches = Batches(db)
      val q = TaskQueue[IO, String](db, "q")
      for
        batch <- batches.open(TaskQueue[IO, String](db, "done"), NewTask("done"))
        tasks <- failure(batches.add(batch, q, Vector(NewTask("ok"), NewTask("bad", priority = 1 << 20))))
        unknownParent <-
          failure(batches.add(batch, q, Vector(NewTask("orphan", after = Vector(After.completed(99999L))))))
        cycle <- failure(
          batches.addGraph(
            batch,
            TaskGraph.empty.add("a", q, NewTask("a"), Vector(After.completed("b")))
              .add("b", q, NewTask("b"), Vector(After.completed("a")))
          )
        )
        now <- batches.progress(batch)
        members <- Rows.count(db, "tasks", "batch IS NOT NULL")
      yield
        tasks match
          case e: InvalidSettings =>
            assertEquals(e.settings, "NewTask")
            assertEquals(e.errors, List("task 1: priority must fit in a smallint, was: 1048576"))
          case other => fail(s"expected InvalidSettings, got $other")
        unknownParent match
          case e: InvalidSettings =>
            assert(e.errors.head.startsWith("task 0 waits for unknown task 99999"), e.errors)
          case other => fail(s"expected InvalidSettings, got $other")
        cycle match
          case e: InvalidSettings => assert(e.errors.exists(_.contains("'a' → 'b' → 'a'")), e.errors)
          case other => fail(s"expected InvalidSettings, got $other")
        assertEquals(now.map(_.members), Some(0L))
        assertEquals(members, 0L)
  }

  withDb("a cancel with an empty reason or a bad operator is refused, naming it, and closes nothing") { db =>
    for
      batch <- Batches(db).open(TaskQueue[IO, String](db, "done"), NewTask("done"))
      empty <- failure(Batches(db).cancel(batch, ""))
      badOperator <- failure(Batches(db, Operator("")).cancel(batch))
      now <- Batches(db).progress(batch)
    yield
      assertEquals(empty.getMessage, "invalid Batches.cancel: a cancel's reason must not be empty, was: ''")
      assert(badOperator.getMessage.startsWith("invalid Operator: "), badOperator.getMessage)
      assertEquals(now.map(_.closed), Some(false))
  }

  withDb("a prune with a negative age or an empty round is refused, naming both") { db =>
    failure(Batches(db).prune(-1.second, batch = 0)).map(e =>
      assertEquals(
        e.getMessage,
        "invalid Batches.prune: olderThan must be >= 0, was: -1 seconds; batch must be > 0, was: 0"
      )
    )
  }
