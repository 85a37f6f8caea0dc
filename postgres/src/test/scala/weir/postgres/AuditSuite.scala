package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.implicits.*
import weir.InvalidSettings
import weir.postgres.internal.{AdminSql, Counters, Pruner, Sql, WorkerLog}

import scala.concurrent.duration.*

/**
 * The audit log: each action of [[TaskAdmin]] recorded with its operator, target and outcome in the action's
 * own transaction, a failed call recording nothing, the keyset pages of [[AuditLog.entries]], and the prune.
 */
class AuditSuite extends DbSuite:

  private val ada = Operator("ada", Some("s-1"))

  /** `(operator, action, queue, task, outcome, detail)` of every entry, oldest first. */
  private def log(db: Database[IO]) =
    AuditLog(db).entries(limit =
      1000
    ).map(_.reverse.map(e => (e.operator, e.action, e.queue, e.task, e.outcome, e.detail)))

  withDb("every action is recorded with its operator, target and outcome, in the action's own transaction") {
    db =>
      val sql = new Sql(db.schema)
      val admin = TaskAdmin(db, ada)
      import AuditAction.*, AuditOutcome.*
      for
        ids <- TaskQueue[IO, Int](db, "a")
          .enqueueMany(Vector(NewTask(1, maxAttempts = 1), NewTask(2), NewTask(3), NewTask(4)))
          .map(_.map(_.taskId))
        Vector(dead, running, waiting, other) = ids: @unchecked
        owner <- sql.register("w", 1000).transact(db.transactor)
        claimed <- sql.claim("a", owner, 2, 60000).map(_.rows).transact(db.transactor)
        _ <- sql.fail(Array(claimed.head.token), Array("boom"), Array(0L)).transact(db.transactor)
        _ <- admin.queues.pause("a")
        _ <- admin.queues.resume("a")
        _ <- admin.queues.limits("a", Some(3), Some(QueueRate(2.5, 5)))
        _ <- admin.queues.limitRunning("a", None)
        _ <- admin.queues.limitRate("a", None)
        controlsXmin <- Rows.query[String](s"SELECT xmin::text FROM ${db.schema("queues")} WHERE name = 'a'")
        cancels <-
          Vector(
            admin.tasks.cancel(waiting, "no longer needed"),
            admin.tasks.cancel(running),
            admin.tasks.cancel(dead)
          )
            .sequence
        missing <- admin.tasks.cancel(999999L)
        retried <- admin.tasks.retry(dead)
        retriedXmin <- Rows.query[String](s"SELECT xmin::text FROM ${db.schema("tasks")} WHERE id = $dead")
        notDead <- admin.tasks.retry(other)
        discarded <- admin.tasks.discard(waiting)
        batch <- admin.tasks.discardMany(Vector(other, 999998L))
        entries <- log(db)
        xmins <- Rows.query[(String, String)](
          s"SELECT action, xmin::text FROM ${db.schema("audit")} WHERE action IN ('limits', 'retry') ORDER BY id"
        )
      yield
        assertEquals(
          cancels,
          Vector(
            weir.postgres.Cancel.Cancelled,
            weir.postgres.Cancel.Requested,
            weir.postgres.Cancel.Finished(FinishedState.Dead)
          )
        )
        assertEquals(
          (missing, retried, notDead, discarded, batch),
          (
            weir.postgres.Cancel.NotFound,
            weir.postgres.Retry.Retried,
            weir.postgres.Retry.Refused(TaskState.Available),
            weir.postgres.Discard.Discarded,
            Vector(weir.postgres.Discard.Refused(TaskState.Available), weir.postgres.Discard.NotFound)
          )
        )
        val a = Some("a")
        assertEquals(
          entries,
          Vector(
            (ada, Pause, a, None, Done, None),
            (ada, Resume, a, None, Done, None),
            (ada, Limits, a, None, Done, Some("max running: 3; rate: 2.5/s, burst 5")),
            (ada, Limits, a, None, Done, Some("max running: none")),
            (ada, Limits, a, None, Done, Some("rate: none")),
            (ada, Cancel, a, Some(waiting), Done, Some("no longer needed")),
            (ada, Cancel, a, Some(running), Requested, Some("requested by ada")),
            (ada, Cancel, a, Some(dead), Refused, Some("already dead")),
            (ada, Cancel, None, Some(999999L), NotFound, None),
            (ada, Retry, a, Some(dead), Done, None),
            (
              ada,
              Retry,
              a,
              Some(other),
              Refused,
              Some("the task is available: only a dead or cancelled task can be retried")
            ),
            (ada, Discard, a, Some(waiting), Done, None),
            (
              ada,
              Discard,
              a,
              Some(other),
              Refused,
              Some("the task is available: only a dead or cancelled task can be discarded")
            ),
            (ada, Discard, None, Some(999998L), NotFound, None)
          )
        )
        // the same transaction wrote the action's row and the entry: the last limit, and the retry
        assertEquals(xmins.filter(_._1 == "limits").last._2, controlsXmin.head)
        assertEquals(xmins.filter(_._1 == "retry").head._2, retriedXmin.head)
  }

  withDb("a call that fails records nothing, and changes nothing") { db =>
    for
      _ <- TaskAdmin(db).queues.add("a")
      unknown <- TaskAdmin(db, ada).queues.pause("nope").attempt
      badLimit <- TaskAdmin(db, ada).queues.limitRunning("a", Some(0)).attempt
      nameless <- TaskAdmin(db, Operator(" ")).queues.pause("a").attempt
      long <- TaskAdmin(db, Operator("x" * 201, Some("y" * 201))).tasks.retryMany(Vector(1L)).attempt
      entries <- log(db)
      paused <- TaskAdmin(db).overview.queues.map(_.exists(_.paused))
    yield
      assert(unknown.left.exists(_.isInstanceOf[UnknownQueue]), unknown.toString)
      assert(badLimit.left.exists(_.isInstanceOf[InvalidSettings]), badLimit.toString)
      assertEquals(
        nameless.left.map(_.getMessage),
        Left("invalid Operator: an operator's name must have 1 to 200 characters, was: 1 characters")
      )
      assertEquals(
        long.left.map(_.getMessage),
        Left(
          "invalid Operator: an operator's name must have 1 to 200 characters, was: 201 characters; " +
            "an operator's session must have at most 200 characters, was: 201 characters"
        )
      )
      assertEquals(entries, Vector.empty)
      assert(!paused)
  }

  withDb("TaskAdmin(db) records its actions as code; as(operator) names who acts, and the cancel's reason") {
    db =>
      for
        ids <- TaskQueue[IO, Int](db, "a").enqueueMany(Vector(NewTask(1), NewTask(2))).map(_.map(_.taskId))
        _ <- TaskAdmin(db).tasks.cancel(ids(0))
        _ <- TaskAdmin(db).as(Operator("bob")).tasks.cancel(ids(1))
        entries <- log(db)
        done <- Rows.finished(db)
      yield
        assertEquals(
          entries.map(e => (e._1, e._6)),
          Vector(
            (Operator.code, Some("requested by an operator")),
            (Operator("bob"), Some("requested by bob"))
          )
        )
        assert(done.map(_._4).forall(_.contains("cancelled: requested by")), done.toString)
  }

  withDb("entries: newest first, by operator, queue and task, in keyset pages that cover each entry once") {
    db =>
      val operators = Vector("ada", "bob", "cy")
      for
        _ <- Vector("a", "b").traverse_(TaskAdmin(db).queues.add)
        ids <- TaskQueue[IO, Int](db, "a").enqueueMany((1 to 3).map(NewTask(_))).map(_.map(_.taskId))
        _ <- (0 until 30).toVector.traverse_ { i =>
          val admin = TaskAdmin(db, Operator(operators(i % 3)))
          if i % 4 == 3 then admin.tasks.retry(ids(i % 3)).void
          else admin.queues.pause(if i % 2 == 0 then "a" else "b")
        }
        all <- Rows.query[(Long, String, Option[String], Option[Long])](
          s"SELECT id, operator, queue, task FROM ${db.schema("audit")} ORDER BY id DESC"
        )
        filters = Vector(
          AuditFilter(),
          AuditFilter(operator = Some("bob")),
          AuditFilter(queue = Some("b")),
          AuditFilter(operator = Some("cy"), queue = Some("a")),
          AuditFilter(task = Some(ids(1))),
          AuditFilter(operator = Some("nobody"))
        )
        walked <- filters.traverse { f =>
          def walk(before: Option[Long], seen: Vector[Long]): IO[Vector[Long]] =
            AuditLog(db).entries(f.copy(before = before), limit = 4).flatMap { page =>
              assert(page.size <= 4)
              if page.isEmpty then IO.pure(seen) else walk(Some(page.last.id), seen ++ page.map(_.id))
            }
          walk(None, Vector.empty)
        }
        bad <- AuditLog(db).entries(limit = 0).attempt
      yield
        assertEquals(all.size, 30)
        def expected(f: AuditFilter) = all.collect {
          case (id, op, q, t)
              if f.operator.forall(_ == op) && f.queue.forall(q.contains) && f.task.forall(t.contains) => id
        }
        filters.zip(walked).foreach((f, ids) => assertEquals(ids, expected(f), f.toString))
        assertEquals(walked(1).size, 10)
        assertEquals(
          bad.left.map(_.getMessage),
          Left("invalid AuditLog.entries: limit must be in 1..1000, was: 0")
        )
  }

  withDb("the workers' pruner deletes entries past Retention.audit; AuditLog.prune deletes in batches") {
    db =>
      val audit = db.schema("audit")
      // half a minute off the planted rows' whole minutes, so no row sits on a boundary
      val retention = Retention(audit = 60.5.minutes)
      for
        _ <- Rows.exec(
          s"""INSERT INTO $audit (at, operator, action, queue, outcome)
            SELECT now() - (g || ' minutes')::interval, 'ada', 'pause', 'a', 'done' FROM generate_series(1, 2500) AS g"""
        )
        pruned <- AuditLog(db).prune(1000.5.minutes, batch = 300)
        afterCall <- Rows.count(db, "audit")
        log = new WorkerLog[IO](org.typelevel.log4cats.noop.NoOpFactory[IO], "p", 0L)
        every = weir.Service.Settings.periodic("prune", 100.millis)
        _ <- Pruner
          .resource(db.run, new AdminSql(db.schema), retention, log, new Counters, every)
          .use(_ => (IO.sleep(100.millis) *> Rows.count(db, "audit")).iterateUntil(_ <= 60L))
        kept <- Rows.count(db, "audit", "at > now() - interval '61 minutes'")
        left <- Rows.count(db, "audit")
        bad <- AuditLog(db).prune(-1.second, batch = 0).attempt
      yield
        assertEquals(pruned, 1500L)
        assertEquals(afterCall, 1000L)
        assertEquals((kept, left), (60L, 60L))
        assertEquals(
          bad.left.map(_.getMessage),
          Left("invalid AuditLog.prune: olderThan must be >= 0, was: -1 seconds; batch must be > 0, was: 0")
        )
  }
