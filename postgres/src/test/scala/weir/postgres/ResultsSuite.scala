package weir.postgres

import cats.effect.{IO, Ref}
import doobie.implicits.*
import weir.Pipeline
import weir.postgres.internal.GraphSql

import scala.concurrent.duration.*

/**
 * Results against a real server: a recording worker stores each handler's value with its finished task,
 * whatever `keepCompleted` says; a dependent reads its parents' results from its job; `None` stores none; a
 * result over the bound sends its task to dead at once, naming its size; and a result goes with its row when
 * the row is pruned.
 */
class ResultsSuite extends DbSuite:

  withDb(
    "a recording worker stores each value as its task's result, kept without keepCompleted; a dependent reads them"
  ) {
    db =>
      val q = TaskQueue[IO, Int](db, "r")
      val config = TestWorkers.config("r").copy(keepCompleted = false)
      for
        a <- q.enqueue(NewTask(1)).map(_.taskId)
        b <- q.enqueue(NewTask(2)).map(_.taskId)
        _ <- q.enqueue(NewTask(3, after = Vector(After.completed(a), After.finished(b))))
        seen <- Ref[IO].of(Vector.empty[Vector[Parent]])
        _ <- TestWorkers.statsAfterRun(DurableWorker.startRecording[IO, Int, Int](db, config) { source =>
          Pipeline(source).process { job =>
            job.parents.transact(db.transactor).flatMap(ps => seen.update(_ :+ ps)).as(job.payload * 10)
          }
        })
        read <- seen.get
        stored <- Rows.query[(Long, String, Option[String])](
          s"SELECT id, state::text, result::text FROM ${db.schema("finished")} ORDER BY id"
        )
      yield
        val c = stored.last._1
        assertEquals(
          stored,
          Vector((a, "completed", Some("10")), (b, "completed", Some("20")), (c, "completed", Some("30")))
        )
        // the two parents read nothing; the dependent read both, in the order it named them
        assertEquals(read.count(_.isEmpty), 2)
        val parents = read.find(_.nonEmpty).get
        assertEquals(
          parents,
          Vector(
            Parent(a, Some(TaskState.Completed), Some("10")),
            Parent(b, Some(TaskState.Completed), Some("20"))
          )
        )
        assertEquals(parents.map(_.resultAs[Int]), Vector(Right(Some(10)), Right(Some(20))))
        assert(parents.head.resultAs[String].isLeft)
  }

  withDb("a value whose JSON is null stores no result: the task is completed as start completes it") { db =>
    val q = TaskQueue[IO, Int](db, "r")
    val config = TestWorkers.config("r").copy(keepCompleted = false)
    for
      a <- q.enqueue(NewTask(1)).map(_.taskId)
      c <-
        TaskQueue[IO, Int](db, "later").enqueue(NewTask(2, after = Vector(After.completed(a)))).map(_.taskId)
      _ <- TestWorkers.statsAfterRun(DurableWorker.startRecording[IO, Int, Option[Int]](db, config) {
        source =>
          Pipeline(source).process(_ => IO.pure(None))
      })
      kept <- Rows.count(db, "finished")
      parents <- new GraphSql(db.schema).parentsOf(c).transact(TestDatabase.admin)
      state <- Rows.query[(String, Int)](
        s"SELECT ${Rows.liveState(db)} FROM ${db.schema("tasks")} AS t WHERE t.id = $c"
      ).map(_.map(_._1))
    yield
      // completed without a result; its row kept (migration 14) as a task that another waits for
      assertEquals(kept, 1L)
      assertEquals(parents, Vector(Parent(a, Some(TaskState.Completed), None)))
      assertEquals(state, Vector("available"))
  }

  withDb(
    "a result over maxResultBytes sends its task to dead at once, naming its size; its dependents are cancelled"
  ) {
    db =>
      val q = TaskQueue[IO, String](db, "r")
      val config = TestWorkers.config("r").copy(maxResultBytes = 10)
      for
        big <- q.enqueue(NewTask("a" * 20, maxAttempts = 5)).map(_.taskId)
        small <- q.enqueue(NewTask("b" * 8, maxAttempts = 5)).map(_.taskId)
        child <- q.enqueue(NewTask("c", after = Vector(After.completed(big)))).map(_.taskId)
        _ <- TestWorkers.statsAfterRun(DurableWorker.startRecording[IO, String, String](db, config) {
          source =>
            Pipeline(source).process(job => IO.pure(job.payload))
        })
        ends <- Rows.query[(Long, String, Int, String, Option[String])](
          s"SELECT id, state::text, attempt, errors::text, result::text FROM ${db.schema("finished")} ORDER BY id"
        )
      yield
        val byId = ends.map(e => e._1 -> e).toMap
        assertEquals(byId(big)._2, "dead")
        assertEquals(byId(big)._3, 1)
        assert(
          byId(big)._4.contains(
            s"the result of task $big takes 22 bytes of JSON, more than maxResultBytes (10)"
          ),
          byId(big)._4
        )
        // ten bytes of JSON: the eight letters and their quotes
        assertEquals(byId(small)._5, Some("\"bbbbbbbb\""))
        assertEquals(byId(child)._2, "cancelled")
  }

  withDb("a result goes with its finished row when the row is pruned") { db =>
    val q = TaskQueue[IO, Int](db, "r")
    for
      a <- q.enqueue(NewTask(7)).map(_.taskId)
      c <-
        TaskQueue[IO, Int](db, "later").enqueue(NewTask(8, after = Vector(After.completed(a)))).map(_.taskId)
      _ <- TestWorkers.statsAfterRun(DurableWorker.startRecording[IO, Int, Int](db, TestWorkers.config("r")) {
        source => Pipeline(source).process(job => IO.pure(job.payload))
      })
      before <- new GraphSql(db.schema).parentsOf(c).transact(TestDatabase.admin)
      pruned <- TaskAdmin(db).prune(Duration.Zero, Set(FinishedState.Completed))
      after <- new GraphSql(db.schema).parentsOf(c).transact(TestDatabase.admin)
    yield
      assertEquals(before, Vector(Parent(a, Some(TaskState.Completed), Some("7"))))
      assertEquals(pruned, 1L)
      assertEquals(after, Vector(Parent(a, None, None)))
  }
