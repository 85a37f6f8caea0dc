package weir.postgres

import cats.effect.IO
import weir.InvalidSettings

/**
 * What an enqueue of tasks that wait for others refuses, before it inserts anything, each error naming its
 * task and the value: a cycle, a handle that names no task or two, an entry named twice, a task of another
 * schema, a task's own bad values, and an existing parent that no task of the schema is.
 */
class GraphValidationSuite extends DbSuite:

  /** The errors of enqueueing `graph` into `db`, and the tasks left in its schema (none, when refused). */
  private def refusal(db: Database[IO], graph: TaskGraph): IO[(List[String], Long)] =
    graph.enqueue(db).attempt.flatMap {
      case Left(e: InvalidSettings) =>
        assert(e.getMessage.startsWith("invalid TaskGraph: "), e.getMessage)
        Rows.count(db, "tasks").map(n => (e.errors, n))
      case other => IO(fail(s"expected InvalidSettings, got $other"))
    }

  withDb("a cycle is refused, its tasks named in order, each waiting for the next") { db =>
    val q = TaskQueue[IO, Int](db, "q")
    val graph = TaskGraph.empty
      .add("root", q, NewTask(0))
      .add("a", q, NewTask(1), after = Vector(After.completed("root"), After.completed("b")))
      .add("b", q, NewTask(2), after = Vector(After.finished("c")))
      .add("c", q, NewTask(3), after = Vector(After.completed("a")))
      .add("self", q, NewTask(4), after = Vector(After.completed("self")))
    refusal(db, graph).map { (errors, left) =>
      assertEquals(errors, List("tasks 'a' → 'b' → 'c' → 'a' wait for each other: a graph has no cycle"))
      assertEquals(left, 0L)
    }
  }

  withDb("a self-wait is a cycle of one") { db =>
    val q = TaskQueue[IO, Int](db, "q")
    refusal(db, TaskGraph.empty.add("self", q, NewTask(4), after = Vector(After.completed("self")))).map {
      (errors, _) =>
        assertEquals(errors, List("tasks 'self' → 'self' wait for each other: a graph has no cycle"))
    }
  }

  withDb("handles that name no task, none or two, entries named twice and bad tasks are named, all at once") {
    db =>
      val q = TaskQueue[IO, Int](db, "q")
      val graph = TaskGraph.empty
        .add("a", q, NewTask(1, priority = 40000))
        .add("a", q, NewTask(2))
        .add("", q, NewTask(3))
        .add("b", q, NewTask(4), after = Vector(After.completed("nope"), After.completed("a")))
        .add("c", q, NewTask(5, after = Vector(After.completed(7L), After.finished(7L))))
        .add("d", q, NewTask(6), after = Vector(After.completed("c"), After.finished("c")))
      refusal(db, graph).map { (errors, left) =>
        assertEquals(
          errors,
          List(
            "task 'a': priority must fit in a smallint, was: 40000",
            "task '': its handle must not be empty",
            "task 'b' waits for 'nope', which names no task of the graph",
            "task 'c': after names task 7 more than once: a task waits for each parent once",
            "task 'd' names 'c' more than once in its after",
            "handle 'a' names 2 tasks (task 'a', task 'a'): a handle names one task"
          )
        )
        assertEquals(left, 0L)
      }
  }

  withDb("a task of a queue of another schema is refused, naming both schemas") { db =>
    val elsewhere = TestDatabase.config(Schema("elsewhere"))
    Database.pool[IO](elsewhere).use { other =>
      val graph = TaskGraph.empty
        .add("here", TaskQueue[IO, Int](db, "q"), NewTask(1))
        .add("there", TaskQueue[IO, Int](other, "q"), NewTask(2), after = Vector(After.completed("here")))
      refusal(db, graph).map { (errors, left) =>
        assertEquals(
          errors,
          List(
            s"task 'there' is of queue 'q' of schema 'elsewhere', not of schema '${db.schema}' that the graph is " +
              "enqueued into: a graph's tasks, and the tasks they wait for, are of one schema"
          )
        )
        assertEquals(left, 0L)
      }
    }
  }

  withDb(
    "an existing parent that no task of the schema is, or whose row is gone, is refused, naming the ids"
  ) {
    db =>
      val q = TaskQueue[IO, Int](db, "q")
      for
        gone <- q.enqueue(NewTask(0)).map(_.taskId)
        _ <- Rows.exec(s"DELETE FROM ${db.schema("tasks")} WHERE id = $gone")
        graph = TaskGraph.empty
          .add("a", q, NewTask(1, after = Vector(After.completed(gone), After.finished(55555L))))
          .add("b", q, NewTask(2), after = Vector(After.completed("a")))
        refused <- refusal(db, graph)
      yield
        val (errors, left) = refused
        assertEquals(
          errors,
          List(
            s"task 'a' waits for unknown tasks $gone, 55555: no task of schema '${db.schema}' has these ids, or " +
              "its row is gone (completed without keepCompleted, or pruned)"
          )
        )
        assertEquals(left, 0L)
  }

  withDb("a batch of a queue names its bad tasks by index; a lone task's unknown parent names the task") {
    db =>
      val q = TaskQueue[IO, Int](db, "q")
      for
        batch <-
          q.enqueueMany(Vector(NewTask(1), NewTask(2, after = Vector(After.completed(31337L))))).attempt
        lone <- q.enqueue(NewTask(3, after = Vector(After.completed(31338L)))).attempt
        left <- Rows.count(db, "tasks")
      yield
        def named(r: Either[Throwable, ?], error: String) = r match
          case Left(e: InvalidSettings) => assertEquals(e.errors, List(error))
          case other => fail(s"expected InvalidSettings, got $other")
        named(
          batch,
          s"task 1 waits for unknown task 31337: no task of schema '${db.schema}' has this id, or its row is gone " +
            "(completed without keepCompleted, or pruned)"
        )
        named(
          lone,
          s"the task waits for unknown task 31338: no task of schema '${db.schema}' has this id, or its row is gone " +
            "(completed without keepCompleted, or pruned)"
        )
        assertEquals(left, 0L)
  }
