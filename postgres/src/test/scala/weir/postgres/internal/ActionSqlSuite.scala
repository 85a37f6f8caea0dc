package weir.postgres.internal

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.postgres.*
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * The statements of the task actions where a statement's snapshot and its lock disagree: a row that another
 * transaction moves while the action waits for its lock is acted on as it stands after that commit, not
 * taken for missing. And the cut of a call's ids into runs of distinct ids.
 */
class ActionSqlSuite extends DbSuite, ScalaCheckSuite:

  property(
    "distinctRuns: the runs, joined, are the ids; none repeats an id; each next one starts with a repeat"
  ) {
    Prop.forAll(Gen.listOf(Gen.choose(0L, 6L)).map(_.toVector)) { ids =>
      val runs = ActionSql.distinctRuns(ids)
      assertEquals(runs.flatten, ids)
      assert(runs.forall(r => r.nonEmpty && r.distinct == r), runs.toString)
      // as long as can be: a run ends only where the next id is already in it
      runs.sliding(2).foreach {
        case Vector(a, b) => assert(a.contains(b.head), runs.toString)
        case _ => ()
      }
    }
  }

  /** A task of `queue` claimed by a registered worker: its id and claim token. */
  private def claimed(db: Database[IO], queue: String, maxAttempts: Int = 20): IO[(Long, Long)] =
    val sql = new Sql(db.schema)
    for
      _ <- TaskQueue[IO, Int](db, queue).enqueue(NewTask(1, maxAttempts = maxAttempts))
      owner <- sql.register("w", 600000).transact(db.transactor)
      row <- sql.claim(queue, owner, 1, 600000).map(_.rows.head).transact(db.transactor)
    yield (row.id, row.token)

  /**
   * Runs `held` in a transaction of another session, then `action` (which must wait for a row `held`
   * locks), and commits `held` once the action waits: the action's answer.
   */
  private def racing[A](held: ConnectionIO[Unit], action: IO[A]): IO[A] =
    TestDatabase.doomed.use { (xa, pid) =>
      val waiting = Rows.query[Long](
        s"SELECT count(*) FROM pg_locks WHERE NOT granted AND pid <> $pid AND locktype = 'transactionid'"
      ).map(_.head)
      held.transact(xa) *> action.background.use(answer =>
        Eventually.until("the action waits for the held row", waiting, 30.seconds, 20.millis)(_ > 0) *>
          FC.commit.transact(xa) *> answer.flatMap(_.embedNever)
      )
    }

  private def entries(db: Database[IO]) =
    AuditLog(db).entries().map(_.reverse.map(e => (e.task, e.outcome, e.detail)))

  withDb("a cancel that waits for a worker's finish of its task answers that it finished, and records that") {
    db =>
      for
        task <- claimed(db, "c")
        (id, token) = task
        answer <- racing(
          new Sql(db.schema).complete(Array(token), keep = true, keyed = false).void,
          TaskAdmin(db).tasks.cancel(id, "too late")
        )
        recorded <- entries(db)
      yield
        assertEquals(answer, Cancel.Finished(FinishedState.Completed))
        assertEquals(recorded, Vector((Some(id), AuditOutcome.Refused, Some("already completed"))))
  }

  withDb("a cancel that waits for a worker's failure of its task cancels it where the failure put it") { db =>
    for
      task <- claimed(db, "f")
      (id, token) = task
      answer <- racing(
        new Sql(db.schema).fail(Array(token), Array("boom"), Array(0L)).void,
        TaskAdmin(db).tasks.cancel(id, "stop")
      )
      done <- Rows.finished(db)
      recorded <- entries(db)
    yield
      // the failure put it back to wait: the cancel finds it waiting and moves it to finished
      assertEquals(answer, Cancel.Cancelled)
      assertEquals(done.map(_._2), Vector("cancelled"))
      assertEquals(recorded, Vector((Some(id), AuditOutcome.Done, Some("stop"))))
  }

  withDb("a retry that waits for another retry of its task answers that it is waiting, and records that") {
    db =>
      for
        task <- claimed(db, "r", maxAttempts = 1)
        (id, token) = task
        _ <- new Sql(db.schema).fail(Array(token), Array("boom"), Array(0L)).transact(db.transactor)
        answers <- racing(
          new ActionSql(db.schema).retry(Vector(id), Operator("first")).void,
          TaskAdmin(db, Operator("second")).tasks.retryMany(Vector(id, id))
        )
        recorded <- AuditLog(db).entries().map(_.reverse.map(e => (e.operator.name, e.outcome, e.detail)))
        tasks <- Rows.tasks(db)
      yield
        assertEquals(answers, Vector(Retry.Refused(TaskState.Available), Retry.Refused(TaskState.Available)))
        val refused = (
          "second",
          AuditOutcome.Refused,
          Some("the task is available: only a dead or cancelled task can be retried")
        )
        assertEquals(recorded, Vector(("first", AuditOutcome.Done, None), refused, refused))
        assertEquals(tasks.map(t => (t._1, t._2)), Vector((id, "available")))
  }
