package weir.postgres

import cats.effect.{Deferred, IO, Ref}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.Pipeline
import weir.postgres.internal.Sql

import scala.concurrent.duration.*

/**
 * A workflow's identity and the read models of workflows and batches (migration 14) against a real server:
 * every path that ends a task (a completion kept or not, with a result, a failure to dead, a cancel heard
 * by a failure, a hand-back or a snooze, a rescue, an operator's cancel, a cascading cancel, a workflow's
 * cancel) leaves its row in `finished` with its workflow, parents and batch, counted; which workflow a task
 * joins, by the way it was enqueued; the views, their bounds and their errors; the cancels' audit entries.
 */
class WorkflowViewSuite extends DbSuite:

  private def claim(db: Database[IO], queue: String): IO[Map[Long, Long]] =
    new Sql(db.schema).claim(queue, 1L, 100, 60000L).transact(TestDatabase.admin).map(
      _.rows.map(r => r.id -> r.token).toMap
    )

  private def atSql[A](program: ConnectionIO[A]): IO[A] = program.transact(TestDatabase.admin)

  /** `(id, workflow, after as text, batch)` of every finished task, by id. */
  private def kept(db: Database[IO]): IO[Vector[(Long, Option[Long], Option[String], Option[Long])]] =
    Rows.query[(Long, Option[Long], Option[String], Option[Long])](
      s"SELECT id, workflow, after::text, batch FROM ${db.schema("finished")} ORDER BY id"
    )

  withDb(
    "every path that ends a task of a workflow and a batch keeps its workflow, parents and batch in finished, one row each"
  ) { db =>
    val q = TaskQueue[IO, String](db, "q")
    val other = TaskQueue[IO, String](db, "other")
    val callbacks = TaskQueue[IO, String](db, "done")
    val batches = Batches(db, Operator("ops"))
    val sql = new Sql(db.schema)
    val children = (1 to 7).map(i => s"c$i")
    val graph = children.foldLeft(TaskGraph.empty.add("root", q, NewTask("root")))((g, c) =>
      g.add(
        c,
        q,
        NewTask(c, maxAttempts = if c == "c7" then 1 else 5),
        after = Vector(After.finished("root"))
      )
    ).add("c8", other, NewTask("c8"), after = Vector(After.finished("root")))
      .add("doomed", other, NewTask("doomed"), after = Vector(After.completed("c3")))
      .add("op", other, NewTask("op"), after = Vector(After.completed("root")))
    for
      batch <- batches.open(callbacks, NewTask("done"))
      ids <- batches.addGraph(batch, graph).map(_.view.mapValues(_.taskId).toMap)
      _ <- batches.close(batch)
      w = WorkflowId(ids("root"))
      // an operator's cancel of a waiting task
      _ <- TaskAdmin(db).tasks.cancel(ids("op"))
      // a completion without keepCompleted: the trigger writes the row
      root <- claim(db, "q")
      _ <- atSql(sql.complete(Array(root(ids("root"))), keep = false, keyed = false))
      tokens <- claim(db, "q")
      token = (c: String) => Array(tokens(ids(c)))
      _ <- atSql(sql.complete(token("c1"), keep = true, keyed = true))
      _ <- atSql(sql.record(token("c2"), Array("{\"n\": 2}"), keyed = false))
      // a failure for good: dead, and "doomed", which needs it completed, cancelled by the cascade
      _ <- atSql(sql.fail(token("c3"), Array("boom"), Array(-1L)))
      requested <- TaskAdmin(db).tasks.cancelMany(Vector("c4", "c5", "c6").map(ids))
      _ <- atSql(sql.fail(token("c4"), Array("interrupted"), Array(0L)))
      _ <- atSql(sql.handBack(token("c5")))
      _ <- atSql(sql.snooze(token("c6"), Array(1000L)))
      // a rescue: c7 used its only attempt and its lease expired
      _ <- Rows.exec(
        s"UPDATE ${db.schema("tasks")} SET lease_expires_at = now() - interval '1 minute' WHERE id = ${ids("c7")}"
      )
      rescued <- atSql(sql.rescue(60000L, 100, leases = true))
      // the workflow's cancel: c8, in another queue, waits to run
      cancel <- Workflows(db, Operator("ops")).cancel(w, "stop")
      rows <- kept(db)
      view <- TaskBrowser(db).workflow(w)
      audit <- AuditLog(db).entries(AuditFilter(task = Some(ids("c8"))))
    yield
      assertEquals(requested, Vector.fill(3)(Cancel.Requested))
      assertEquals(rescued, (0, 1, 0))
      assertEquals(cancel, GroupCancel(cancelled = 1, requested = 0, ended = 0))
      val mine = rows.filter(_._2.contains(w.value))
      assertEquals(mine.map(_._1).toSet, ids.values.toSet, "one finished row per task, each in the workflow")
      assertEquals(mine.size, ids.size)
      assert(mine.forall(_._4.contains(batch.value)), s"every row keeps its batch: $mine")
      val after = mine.map(r => r._1 -> r._3).toMap
      assertEquals(after(ids("root")), None)
      children.foreach(c => assertEquals(after(ids(c)), Some(s"{${ids("root")}}"), c))
      assertEquals(after(ids("doomed")), Some(s"{${ids("c3")}}"))
      val state = view.tasks.map(t => t.id -> t.state).toMap
      assertEquals(
        Vector("root", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "doomed", "op").map(c =>
          state(ids(c))
        ),
        Vector(TaskState.Completed, TaskState.Completed, TaskState.Completed, TaskState.Dead) ++
          Vector.fill(3)(TaskState.Cancelled) ++ Vector(TaskState.Dead) ++ Vector.fill(3)(TaskState.Cancelled)
      )
      assertEquals(
        view.counts,
        Map(TaskState.Completed -> 3L, TaskState.Dead -> 2L, TaskState.Cancelled -> 6L)
      )
      assert(view.ended && !view.truncated)
      assertEquals(
        view.layers.map(_.map(_.id)),
        Vector(
          Vector(ids("root")),
          (children :+ "c8" :+ "op").map(ids).sorted.toVector,
          Vector(ids("doomed"))
        )
      )
      assertEquals(view.tasks.filter(_.result).map(_.id), Vector(ids("c2")))
      assertEquals(
        audit.map(e => (e.operator.name, e.action, e.outcome, e.detail)),
        Vector(
          ("ops", AuditAction.Cancel, AuditOutcome.Done, Some("stop"))
        )
      )
  }

  withDb(
    "a task enqueued after others joins their oldest workflow, a parent in none counting as the root of its own; a graph after existing tasks joins theirs"
  ) { db =>
    val q = TaskQueue[IO, String](db, "q")
    def workflowOf(id: Long) =
      Rows.query[Option[Long]](s"SELECT workflow FROM ${db.schema("tasks")} WHERE id = $id").map(_.head)
    for
      plain <- q.enqueue(NewTask("plain")).map(_.taskId)
      lone <- q.enqueue(NewTask("lone")).map(_.taskId)
      child <- q.enqueue(NewTask("child", after = Vector(After.completed(plain)))).map(_.taskId)
      g <- TaskGraph.empty.add(
        "a",
        q,
        NewTask("a")
      ).add("b", q, NewTask("b"), after = Vector(After.completed("a")))
        .enqueue(db).map(_.view.mapValues(_.taskId).toMap)
      // waits for tasks of two workflows: joins the older one, the plain task's
      both <- q.enqueue(NewTask("both", after = Vector(After.completed(g("b")), After.completed(child))))
        .map(_.taskId)
      bySql <-
      (Fragment.const(s"SELECT task_id FROM ${db.schema("enqueue")}(") ++
        fr0"'q', '1'::jsonb, after => ${Array(g("a"))})").query[Long].unique.transact(db.transactor)
      joined <- TaskGraph.empty.add("x", q, NewTask("x", after = Vector(After.completed(g("b")))))
        .add("y", q, NewTask("y"), after = Vector(After.completed("x"))).enqueue(db)
        .map(_.view.mapValues(_.taskId).toMap)
      workflows <- Vector(plain, lone, child, g("a"), g("b"), both, bySql, joined("x"), joined("y"))
        .traverse(workflowOf)
      rootView <- TaskBrowser(db).workflow(WorkflowId(plain))
      graphView <- TaskBrowser(db).workflow(WorkflowId(g("a")))
      details <-
        Vector(plain, child, lone).traverse(id => TaskBrowser(db).task(id).map(_.flatMap(_.workflow)))
      unknownLone <- TaskBrowser(db).workflow(WorkflowId(lone)).attempt
      unknownChild <- TaskBrowser(db).workflow(WorkflowId(child)).attempt
      cancelUnknown <- Workflows(db).cancel(WorkflowId(lone)).attempt
    yield
      assertEquals(
        workflows,
        Vector(
          None,
          None,
          Some(plain),
          Some(g("a")),
          Some(g("a")),
          Some(plain),
          Some(g("a")),
          Some(g("a")),
          Some(g("a"))
        )
      )
      assertEquals(rootView.tasks.map(t => (t.id, t.layer)), Vector(plain -> 0, child -> 1, both -> 2))
      assertEquals(rootView.tasks.last.after, Vector(g("b"), child))
      assertEquals(
        graphView.tasks.map(t => (t.id, t.layer)),
        Vector(g("a") -> 0, g("b") -> 1, bySql -> 1, joined("x") -> 2, joined("y") -> 3)
      )
      assertEquals(graphView.counts, Map(TaskState.Available -> 1L, TaskState.Waiting -> 4L))
      assertEquals(details, Vector(Some(WorkflowId(plain)), Some(WorkflowId(plain)), None))
      Vector(unknownLone, unknownChild, cancelUnknown).foreach {
        case Left(e: UnknownWorkflow) => assert(e.getMessage.startsWith("unknown workflow"), e.getMessage)
        case other => fail(s"expected UnknownWorkflow, got $other")
      }
  }

  withDb(
    "a workflow's running tasks, which its index leaves out, are read with it: its view, its cancel, the link from its first task's page"
  ) { db =>
    val q = TaskQueue[IO, String](db, "q")
    val browser = TaskBrowser(db)
    for
      root <- q.enqueue(NewTask("root")).map(_.taskId)
      child <- q.enqueue(NewTask("child", after = Vector(After.completed(root)))).map(_.taskId)
      w = WorkflowId(root)
      rootToken <- claim(db, "q")
      _ <- atSql(new Sql(db.schema).complete(Array(rootToken(root)), keep = false, keyed = false))
      childToken <- claim(db, "q")
      // the root (in no workflow of its own) has ended, and the only live task naming the workflow runs
      indexed <- Rows.query[Long](
        s"SELECT count(*) FROM ${db.schema("tasks")} WHERE workflow = ${w.value} AND state <> 'running'"
      )
      page <- browser.task(root)
      view <- browser.workflow(w)
      answer <- Workflows(db, Operator("ops")).cancel(w)
    yield
      assertEquals(childToken.keySet, Set(child))
      assertEquals(indexed, Vector(0L))
      assertEquals(page.flatMap(_.workflow), Some(w))
      assertEquals(view.counts, Map(TaskState.Completed -> 1L, TaskState.Running -> 1L))
      assertEquals(
        view.tasks.map(t => (t.id, t.state)),
        Vector(root -> TaskState.Completed, child -> TaskState.Running)
      )
      assertEquals(answer, GroupCancel(cancelled = 0, requested = 1, ended = 0))
  }

  withDb(
    "a workflow's cancel cancels its waiting tasks at once and asks a running one's worker; a retried task keeps its workflow and parents"
  ) { db =>
    val q = TaskQueue[IO, String](db, "q")
    val sql = new Sql(db.schema)
    for
      g <- TaskGraph.empty.add(
        "a",
        q,
        NewTask("a")
      ).add("b", q, NewTask("b"), after = Vector(After.completed("a")))
        .add("c", q, NewTask("c"), after = Vector(After.completed("b"))).enqueue(db)
        .map(_.view.mapValues(_.taskId).toMap)
      w = WorkflowId(g("a"))
      tokens <- claim(db, "q")
      answer <- Workflows(db, Operator("ops")).cancel(w)
      requested <- Rows.query[Option[String]](
        s"SELECT cancel_requested FROM ${db.schema("tasks")} WHERE id = ${g("a")}"
      )
      _ <- atSql(sql.fail(Array(tokens(g("a"))), Array("interrupted"), Array(0L)))
      again <- Workflows(db).cancel(w)
      retried <- TaskAdmin(db).tasks.retry(g("c"))
      back <- Rows.query[(Option[Long], Option[String])](
        s"SELECT workflow, after::text FROM ${db.schema("tasks")} WHERE id = ${g("c")}"
      )
      view <- TaskBrowser(db).workflow(w)
      bad <- Workflows(db).cancel(w, "").attempt
    yield
      assertEquals(answer, GroupCancel(cancelled = 2, requested = 1, ended = 0))
      assertEquals(requested, Vector(Some("workflow cancelled by ops")))
      assertEquals(again, GroupCancel(0, 0, 0))
      assertEquals(retried, Retry.Retried)
      assertEquals(back, Vector((Some(w.value), Some(s"{${g("b")}}"))))
      assertEquals(view.counts, Map(TaskState.Cancelled -> 2L, TaskState.Available -> 1L))
      assert(bad.left.exists(_.isInstanceOf[weir.InvalidSettings]), bad.toString)
  }

  withDb(
    "a workflow's cancel reaches the worker of its running task, which interrupts it: every task ends cancelled"
  ) { db =>
    val q = TaskQueue[IO, String](db, "run")
    for
      g <- TaskGraph.empty.add(
        "a",
        q,
        NewTask("a")
      ).add("b", q, NewTask("b"), after = Vector(After.completed("a")))
        .enqueue(db).map(_.view.mapValues(_.taskId).toMap)
      started <- Deferred[IO, Unit]
      interrupted <- Ref[IO].of(false)
      answer <- DurableWorker.start[IO, String, Unit](db, TestWorkers.config("run")) { source =>
        Pipeline(source).process(_ =>
          (started.complete(()) *> IO.never[Unit]).onCancel(interrupted.set(true))
        )
      }.use(w =>
        started.get.timeout(30.seconds) *> Workflows(db).cancel(WorkflowId(g("a"))) <*
          w.running.join.timeout(30.seconds)
      )
      finalized <- interrupted.get
      view <- TaskBrowser(db).workflow(WorkflowId(g("a")))
    yield
      assertEquals(answer, GroupCancel(cancelled = 1, requested = 1, ended = 0))
      assert(finalized, "the running task's handler was not interrupted")
      assertEquals(view.counts, Map(TaskState.Cancelled -> 2L))
  }

  withDb(
    "a batch's view pages its members by id within its limit, with its progress and callback; a workflow's lists its first tasks and counts them all"
  ) { db =>
    val q = TaskQueue[IO, String](db, "q")
    val callbacks = TaskQueue[IO, String](db, "done")
    val batches = Batches(db)
    val browser = TaskBrowser(db)
    def walk(b: BatchId, after: Long, pages: Vector[BatchView]): IO[Vector[BatchView]] =
      browser.batch(b, after, limit = 4).flatMap(v =>
        v.next.fold(IO.pure(pages :+ v))(n => walk(b, n, pages :+ v))
      )
    for
      batch <- batches.open(callbacks, NewTask("done"))
      ids <- batches.add(batch, q, (1 to 10).map(i => NewTask(s"m$i"))).map(_.map(_.taskId))
      tokens <- claim(db, "q")
      _ <- atSql(new Sql(db.schema).complete(ids.take(3).map(tokens).toArray, keep = false, keyed = false))
      pages <- walk(batch, 0L, Vector.empty)
      chain <- (1 until 12).foldLeft(TaskGraph.empty.add("t0", q, NewTask("t0")))((g, i) =>
        g.add(s"t$i", q, NewTask(s"t$i"), after = Vector(After.completed(s"t${i - 1}")))
      ).enqueue(db).map(_.view.mapValues(_.taskId).toMap)
      firstFive <- browser.workflow(WorkflowId(chain("t0")), limit = 5)
      unknown <- browser.batch(BatchId(batch.value + 100)).attempt
      badLimit <- browser.batch(batch, limit = 0).attempt
      badWorkflowLimit <- browser.workflow(WorkflowId(chain("t0")), limit = 10001).attempt
    yield
      assertEquals(pages.map(_.members.size), Vector(4, 4, 2))
      assertEquals(pages.flatMap(_.members.map(_.id)), ids)
      assertEquals(pages.last.next, None)
      assertEquals(pages.head.members.take(3).map(_.state), Vector.fill(3)(TaskState.Completed))
      assertEquals(pages.head.members.drop(3).map(_.state), Vector(TaskState.Running))
      assertEquals(
        (pages.head.progress.members, pages.head.progress.completed, pages.head.callbackState),
        (10L, 3L, Some(TaskState.Waiting))
      )
      assertEquals(firstFive.tasks.map(_.layer), Vector(0, 1, 2, 3, 4))
      assertEquals((firstFive.total, firstFive.truncated), (12L, true))
      assert(unknown.left.exists(_.isInstanceOf[UnknownBatch]), unknown.toString)
      assert(
        badLimit.left.exists(_.getMessage.contains("limit must be in 1..10000, was: 0")),
        badLimit.toString
      )
      assert(
        badWorkflowLimit.left.exists(_.getMessage.contains("limit must be in 1..10000, was: 10001")),
        badWorkflowLimit.toString
      )
  }
