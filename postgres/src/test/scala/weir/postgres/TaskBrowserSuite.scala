package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.InvalidSettings
import weir.postgres.internal.{Sql, TaskDetailSql}

import java.time.Instant
import scala.concurrent.duration.*

/**
 * The read model's tasks as weir's own statements leave them: enqueued, claimed, failed, completed and
 * cancelled through the library, then read back.
 */
class TaskBrowserSuite extends DbSuite:

  /** The tasks planted, by what was done to them, and the worker that ran them. */
  final case class Planted(
      dead: Long,
      completed: Long,
      cancelled: Long,
      running: Long,
      available: Long,
      scheduled: Long,
      keyed: Vector[Long],
      blocked: Vector[Long],
      owner: Long,
      before: Instant
  ):
    def states: Map[Long, TaskState] =
      Map(
        dead -> TaskState.Dead,
        completed -> TaskState.Completed,
        cancelled -> TaskState.Cancelled,
        running -> TaskState.Running,
        available -> TaskState.Available,
        scheduled -> TaskState.Scheduled,
        keyed(0) -> TaskState.Available,
        keyed(1) -> TaskState.Waiting,
        keyed(2) -> TaskState.Waiting,
        blocked(0) -> TaskState.Available,
        blocked(1) -> TaskState.Waiting,
        blocked(2) -> TaskState.Waiting
      )

  /**
   * Queue `dead`: a task with headers failing both its attempts. `done`: one completed (kept). `gone`: one
   * cancelled while it waited. `busy`: one running, its cancel requested. `a`: one available, one due in an
   * hour, three of key `k`. `j`: three of key `j`, whose head failed once and waits for its retry.
   */
  private def plant(db: Database[IO]): IO[Planted] =
    val sql = new Sql(db.schema)
    def queue(name: String) = TaskQueue[IO, Int](db, name)
    def claim(name: String, owner: Long) =
      sql.claim(name, owner, 1, 60000).map(_.rows.head).transact(db.transactor)
    for
      before <- IO.realTimeInstant
      owner <- sql.register("w", 1000).transact(db.transactor)
      dead <- queue("dead").enqueue(NewTask(1, maxAttempts = 2, headers = Map("tenant" -> "t1", "x" -> "y")))
      first <- claim("dead", owner)
      _ <- sql.fail(Array(first.token), Array("boom 1"), Array(0L)).transact(db.transactor)
      second <- claim("dead", owner)
      _ <- sql.fail(Array(second.token), Array("boom 2"), Array(0L)).transact(db.transactor)
      completed <- queue("done").enqueue(NewTask(2))
      done <- claim("done", owner)
      _ <- sql.complete(Array(done.token), keep = true, keyed = false).transact(db.transactor)
      cancelled <- queue("gone").enqueue(NewTask(3))
      _ <- TaskAdmin(db).tasks.cancel(cancelled.taskId).map(assertEquals(_, Cancel.Cancelled))
      running <- queue("busy").enqueue(NewTask(4))
      _ <- claim("busy", owner)
      _ <- TaskAdmin(db).tasks.cancel(running.taskId, "stop it").map(assertEquals(_, Cancel.Requested))
      available <- queue("a").enqueue(NewTask(5))
      scheduled <- queue("a").enqueue(NewTask(6, delay = 1.hour))
      keyed <- queue("a").enqueueMany((7 to 9).map(NewTask(_, orderingKey = Some("k"))))
      blocked <- queue("j").enqueueMany((10 to 12).map(NewTask(_, orderingKey = Some("j"))))
      head <- claim("j", owner)
      _ <- sql.fail(Array(head.token), Array("not yet"), Array(0L)).transact(db.transactor)
    yield Planted(
      dead.taskId,
      completed.taskId,
      cancelled.taskId,
      running.taskId,
      available.taskId,
      scheduled.taskId,
      keyed.map(_.taskId),
      blocked.map(_.taskId),
      owner,
      before
    )

  withDb(
    "every task is listed and read in the state the statements left it in, and each state lists its own"
  ) {
    db =>
      val browser = TaskBrowser(db)
      for
        p <- plant(db)
        all <- browser.tasks(size = 100)
        byState <- TaskState.values.toVector.traverse(s =>
          browser.tasks(TaskQuery(state = Some(s)), size = 100).map(s -> _.rows.map(_.id))
        )
        read <- p.states.keys.toVector.traverse(id => browser.task(id).map(id -> _.map(_.state)))
      yield
        assertEquals(all.rows.map(r => r.id -> r.state), p.states.toVector.sortBy(-_._1))
        assertEquals((all.next, all.scannedTo), (None, None))
        byState.foreach((s, ids) =>
          assertEquals(ids.toSet, p.states.collect { case (id, `s`) => id }.toSet, s.name)
        )
        assertEquals(read.toMap, p.states.view.mapValues(Some(_)).toMap)
  }

  withDb("a task's detail: its headers, each attempt's error with its worker and time, a cancel's reason") {
    db =>
      val browser = TaskBrowser(db)
      for
        p <- plant(db)
        dead <- browser.task(p.dead).map(_.get)
        running <- browser.task(p.running).map(_.get)
        cancelled <- browser.task(p.cancelled).map(_.get)
        none <- browser.task(p.blocked.max + 1000)
        after <- IO.realTimeInstant
      yield
        assertEquals((dead.queue, dead.attempt, dead.maxAttempts, dead.payload), ("dead", 2, 2, "1"))
        assertEquals(dead.headers, Map("tenant" -> "t1", "x" -> "y"))
        assertEquals(
          dead.errors.map(e => (e.attempt, e.worker, e.error)),
          Vector((Some(1), Some(p.owner), "boom 1"), (Some(2), Some(p.owner), "boom 2"))
        )
        // each error's time is its failure's, between the planting's start and now (the server's clock
        // and this JVM's agree to a second on one machine)
        dead.errors.foreach(e =>
          assert(
            e.at.exists(t => !t.isBefore(p.before.minusSeconds(1)) && !t.isAfter(after.plusSeconds(1))),
            e
          )
        )
        assertEquals((dead.worker, dead.runAt, dead.finishedAt.isDefined), (Some(p.owner), None, true))
        assertEquals(
          (running.state, running.worker, running.cancelRequested, running.finishedAt),
          (TaskState.Running, Some(p.owner), Some("stop it"), None)
        )
        assertEquals(running.headers, Map.empty[String, String])
        assertEquals(
          (cancelled.worker, cancelled.errors.map(_.error)),
          (None, Vector("cancelled: requested by an operator"))
        )
        assertEquals(none, None)
  }

  test("errors and headers written otherwise are read as far as they go, never failing the read") {
    assertEquals(
      TaskDetailSql.errors(
        """[{"attempt": 1, "at": "2026-01-31T12:00:00.123456+01:00", "worker": 7, "error": "e"},
          |{"at": "2026-01-31T12:00:00Z", "error": {"code": 3}}, {"attempt": 2}, 5]""".stripMargin
      ),
      Vector(
        AttemptError(Some(1), Some(Instant.parse("2026-01-31T11:00:00.123456Z")), Some(7L), "e"),
        AttemptError(None, Some(Instant.parse("2026-01-31T12:00:00Z")), None, """{"code":3}"""),
        AttemptError(Some(2), None, None, """{"attempt":2}"""),
        AttemptError(None, None, None, "5")
      )
    )
    assertEquals(TaskDetailSql.errors("not json"), Vector.empty)
    assertEquals(TaskDetailSql.headers(Some("""{"a": "b", "n": 1}""")), Map("a" -> "b"))
    assertEquals(TaskDetailSql.headers(None), Map.empty[String, String])
  }

  withDb(
    "a keyed task's neighbours are its key's tasks around it, in the order they run; none without a key"
  ) {
    db =>
      val browser = TaskBrowser(db)
      for
        p <- plant(db)
        middle <- browser.task(p.keyed(1)).map(_.get)
        last <- browser.task(p.keyed(2)).map(_.get)
        plain <- browser.task(p.available).map(_.get)
        aroundMiddle <- browser.neighbours(middle)
        aroundLast <- browser.neighbours(last, n = 1)
        aroundPlain <- browser.neighbours(plain)
      yield
        assertEquals(
          aroundMiddle.before.map(n => n.id -> n.state),
          Vector(p.keyed(0) -> TaskState.Available)
        )
        assertEquals(aroundMiddle.after.map(n => n.id -> n.state), Vector(p.keyed(2) -> TaskState.Waiting))
        assertEquals(
          aroundLast,
          KeyNeighbours(
            Vector(KeyNeighbour(p.keyed(1), TaskState.Waiting, 0, middle.createdAt)),
            Vector.empty
          )
        )
        assertEquals(aroundPlain, KeyNeighbours.none)
  }

  withDb("keys: a failed head with others behind it first, each backlog up to the cap, at most the limit") {
    db =>
      val browser = TaskBrowser(db)
      for
        p <- plant(db)
        keys <- browser.keys()
        capped <- browser.keys(cap = 2)
        one <- browser.keys(limit = 1)
      yield
        assertEquals(
          keys.map(k => (k.queue, k.key, k.backlog, k.head, k.headState, k.headAttempt, k.blocked)),
          Vector(
            ("j", "j", CappedCount(3, atLeast = false), p.blocked(0), TaskState.Available, 1, true),
            ("a", "k", CappedCount(3, atLeast = false), p.keyed(0), TaskState.Available, 0, false)
          )
        )
        assertEquals(capped.map(_.backlog), Vector.fill(2)(CappedCount(2, atLeast = true)))
        assertEquals(one.map(_.key), Vector("j"))
  }

  withDb("arguments out of range fail naming every bad value, before any read") { db =>
    val browser = TaskBrowser(db)
    val bad = TaskQuery(priority = Some(40000), after = Some(TaskCursor(None, 7)), sort = TaskSort.Finished)
    for
      tasks <- browser.tasks(bad, size = 0, scan = 0).attempt
      keys <- browser.keys(limit = 1001, cap = 0).attempt
    yield
      assertEquals(
        tasks.left.map(_.getMessage),
        Left(
          "invalid TaskBrowser.tasks: size must be in 1..1000, was: 0; scan must be in 1..1000000, was: 0; " +
            "priority must be in -32768..32767, was: 40000; " +
            "after must be a position in finished order (with a finish time), was: 7"
        )
      )
      assertEquals(
        keys.left.map(_.getMessage),
        Left(
          "invalid TaskBrowser.keys: limit must be in 1..1000, was: 1001; cap must be in 1..1000000, was: 0"
        )
      )
  }

  withDb("a task's view is the task, its key's neighbours and its newest actions, read at once") { db =>
    val browser = TaskBrowser(db)
    val ada = Operator("ada", Some("s-1"))
    for
      p <- plant(db)
      middle <- browser.task(p.keyed(1)).map(_.get)
      around <- browser.neighbours(middle)
      before <- browser.view(p.keyed(1))
      _ <- TaskAdmin(db, ada).tasks.cancel(p.keyed(2), "not needed")
      again <- TaskAdmin(db, ada).tasks.cancel(p.keyed(2), "still not needed")
      after <- browser.view(p.keyed(2), neighbours = 1, actions = 1)
      plain <- browser.view(p.available)
      missing <- browser.view(Long.MaxValue)
      bad <- browser.view(p.available, neighbours = 0, actions = 1001).attempt
    yield
      assertEquals(before, Some(TaskView(middle, around, Vector.empty)))
      val cancelled = after.get
      assertEquals(cancelled.task.state, TaskState.Cancelled)
      assertEquals(cancelled.neighbours.before.map(_.id), Vector(p.keyed(1)))
      assertEquals(again, Cancel.Finished(FinishedState.Cancelled))
      // the newest entry only: the second cancel, refused
      assertEquals(
        cancelled.actions.map(e => (e.action, e.task, e.operator, e.outcome)),
        Vector((AuditAction.Cancel, Some(p.keyed(2)), ada, AuditOutcome.Refused))
      )
      assertEquals(plain.map(_.neighbours), Some(KeyNeighbours.none))
      assertEquals(missing, None)
      assertEquals(
        bad.left.map(_.getMessage),
        Left(
          "invalid TaskBrowser.view: neighbours must be in 1..1000, was: 0; actions must be in 1..1000, was: 1001"
        )
      )
  }

  withDb("a neighbours' count out of range fails naming it") { db =>
    val t = TaskDetail(
      1,
      "q",
      TaskState.Available,
      0,
      Some("k"),
      None,
      0,
      1,
      Instant.EPOCH,
      None,
      None,
      None,
      None,
      "1",
      Map.empty,
      Vector.empty
    )
    TaskBrowser(db).neighbours(t, n = 0).attempt.map { r =>
      assert(r.left.exists(_.isInstanceOf[InvalidSettings]), r)
      assertEquals(
        r.left.map(_.getMessage),
        Left("invalid TaskBrowser.neighbours: n must be in 1..1000, was: 0")
      )
    }
  }

  withDb("the vocabulary is the schema's: the stored states are the labels of its two types, in order") {
    db =>
      def labels(tpe: String) =
        Fragment.const(s"SELECT unnest(enum_range(NULL::${db.schema(tpe)}))::text").query[String].to[Vector]
          .transact(TestDatabase.admin)
      (labels("task_state"), labels("finished_state")).mapN { (live, finished) =>
        assertEquals(live, TaskState.values.toVector.filter(s => s.live && s.stored).map(_.name))
        assertEquals(finished, FinishedState.values.toVector.map(_.name))
        assertEquals(TaskState.values.toVector.filterNot(_.live), FinishedState.values.toVector.map(_.state))
        assertEquals(
          TaskState.values.toVector.map(s => TaskState.parse(s.name)),
          TaskState.values.toVector.map(Some(_))
        )
      }
  }
