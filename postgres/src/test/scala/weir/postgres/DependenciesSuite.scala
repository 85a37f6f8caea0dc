package weir.postgres

import cats.effect.{Deferred, IO}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.Pipeline
import weir.postgres.internal.{ControlSql, Sql}
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * Task dependencies against a real server, statement by statement: a dependent waits outside the claim, is
 * released in the transaction of its last parent's end, is cancelled (transitively, naming the parent) by a
 * parent's dead or cancelled end unless it takes any outcome, and parents that ended before the enqueue
 * count as they ended.
 */
class DependenciesSuite extends DbSuite:

  /**
   * `(state, parents left)` of each of `ids` as the read models see them ([[Rows.liveState]]), read in the
   * caller's transaction.
   */
  private def states(db: Database[IO], ids: Long*): ConnectionIO[Vector[(String, Int)]] =
    Fragment
      .const(
        s"SELECT ${Rows.liveState(db)} FROM ${db.schema("tasks")} AS t WHERE t.id IN (${ids.mkString(", ")}) ORDER BY t.id"
      )
      .query[(String, Int)]
      .to[Vector]

  /** `(state, errors as text)` of the finished task `id`. */
  private def ended(db: Database[IO], id: Long): IO[(String, String)] =
    Rows.query[(
        String,
        String
    )](s"SELECT state::text, errors::text FROM ${db.schema("finished")} WHERE id = $id")
      .map(_.head)

  withDb(
    "a dependent waits outside the claim and is released in the transaction of its last parent's completion"
  ) {
    db =>
      val q = TaskQueue[IO, String](db, "q")
      val sql = new Sql(db.schema)
      for
        a <- q.enqueue(NewTask("a")).map(_.taskId)
        b <- q.enqueue(NewTask("b")).map(_.taskId)
        c <- q.enqueue(NewTask("c", after = Vector(After.completed(a), After.completed(b)))).map(_.taskId)
        claimed <- sql.claim("q", 1L, 10, 60000L).transact(TestDatabase.admin)
        token = claimed.rows.map(r => r.id -> r.token).toMap
        inOne <- (for
          afterA <- sql.complete(Array(token(a)), keep = false, keyed = false) *> states(db, c)
          afterB <- sql.complete(Array(token(b)), keep = false, keyed = false) *> states(db, c)
        yield (afterA, afterB)).transact(TestDatabase.admin)
        next <- sql.claim("q", 1L, 10, 60000L).transact(TestDatabase.admin)
      yield
        // the claim took the two parents and skipped the waiting dependent
        assertEquals(claimed.rows.map(_.id).toSet, Set(a, b))
        assertEquals(inOne, (Vector(("waiting", 1)), Vector(("available", 0))))
        assertEquals(next.rows.map(_.id), Vector(c))
  }

  withDb(
    "a dead parent cancels its dependents, transitively, naming the parent; one that takes any outcome runs"
  ) {
    db =>
      val q = TaskQueue[IO, String](db, "q")
      for
        p <- q.enqueue(NewTask("p", maxAttempts = 1)).map(_.taskId)
        c <- q.enqueue(NewTask("c", after = Vector(After.completed(p)))).map(_.taskId)
        g <- q.enqueue(NewTask("g", after = Vector(After.completed(c)))).map(_.taskId)
        any <- q.enqueue(NewTask("any", after = Vector(After.finished(c)))).map(_.taskId)
        ran <- cats.effect.Ref[IO].of(Vector.empty[String])
        _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("q")) {
          source =>
            Pipeline(source).process(job =>
              ran.update(_ :+ job.payload) *>
                IO.raiseError(new RuntimeException("boom")).whenA(job.payload == "p")
            )
        })
        order <- ran.get
        pEnd <- ended(db, p)
        cEnd <- ended(db, c)
        gEnd <- ended(db, g)
        anyEnd <- ended(db, any)
        edges <- Rows.count(db, "dependencies")
      yield
        assertEquals(order, Vector("p", "any"))
        assertEquals(pEnd._1, "dead")
        assertEquals(cEnd._1, "cancelled")
        assert(cEnd._2.contains(s"cancelled: task $p, which it waits for, ended dead"), cEnd._2)
        assertEquals(gEnd._1, "cancelled")
        assert(gEnd._2.contains(s"cancelled: task $c, which it waits for, was cancelled"), gEnd._2)
        assertEquals(anyEnd._1, "completed")
        assertEquals(edges, 0L)
  }

  withDb("an operator's cancel of a waiting dependent cancels it at once, and its own dependents with it") {
    db =>
      val q = TaskQueue[IO, String](db, "q")
      for
        p <- q.enqueue(NewTask("p")).map(_.taskId)
        c <- q.enqueue(NewTask("c", after = Vector(After.completed(p)))).map(_.taskId)
        g <- q.enqueue(NewTask("g", after = Vector(After.completed(c)))).map(_.taskId)
        answer <- TaskAdmin(db).tasks.cancel(c, "not needed")
        cEnd <- ended(db, c)
        gEnd <- ended(db, g)
        left <- states(db, p).transact(TestDatabase.admin)
      yield
        assertEquals(answer, Cancel.Cancelled)
        assertEquals(cEnd._1, "cancelled")
        assertEquals(gEnd._1, "cancelled")
        assert(gEnd._2.contains(s"task $c, which it waits for, ended cancelled"), gEnd._2)
        assertEquals(left, Vector(("available", 0)))
  }

  withDb(
    "parents that ended before the enqueue count as they ended; an id no task has is refused, naming it"
  ) {
    db =>
      val q = TaskQueue[IO, String](db, "q")
      val sql = new Sql(db.schema)
      for
        done <- q.enqueue(NewTask("done")).map(_.taskId)
        dead <- q.enqueue(NewTask("dead", maxAttempts = 1)).map(_.taskId)
        claimed <- sql.claim("q", 1L, 10, 60000L).transact(TestDatabase.admin)
        token = claimed.rows.map(r => r.id -> r.token).toMap
        _ <-
        (sql.complete(Array(token(done)), keep = true, keyed = false) *>
          sql.fail(Array(token(dead)), Array("boom"), Array(-1L))).transact(TestDatabase.admin)
        runs <- q.enqueue(NewTask("runs", after = Vector(After.completed(done)))).map(_.taskId)
        anyway <- q.enqueue(NewTask("anyway", after = Vector(After.finished(dead)))).map(_.taskId)
        doomed <- q.enqueue(NewTask("doomed", after = Vector(After.completed(done), After.completed(dead))))
        unknown <-
          q.enqueue(NewTask("x", after = Vector(After.completed(done), After.completed(987654L)))).attempt
        live <- states(db, runs, anyway).transact(TestDatabase.admin)
        doomedEnd <- ended(db, doomed.taskId)
      yield
        assertEquals(live, Vector(("available", 0), ("available", 0)))
        assert(doomed.isInstanceOf[Enqueued.Inserted], doomed.toString)
        assertEquals(doomedEnd._1, "cancelled")
        assert(doomedEnd._2.contains(s"task $dead, which it waits for, ended dead"), doomedEnd._2)
        unknown match
          case Left(e: weir.InvalidSettings) =>
            assertEquals(
              e.errors,
              List(
                s"the task waits for unknown task 987654: no task of schema '${db.schema}' has this id, or its row is gone (completed without keepCompleted, or pruned)"
              )
            )
          case other => fail(s"expected InvalidSettings, got $other")
  }

  withDb(
    "a dependent with an ordering key waits for its parents, then for its key's turn; later tasks of its key wait behind it"
  ) {
    db =>
      val q = TaskQueue[IO, String](db, "q")
      for
        _ <- q.enqueue(NewTask("p")).map(_.taskId)
        _ <- q.enqueue(NewTask("first", orderingKey = Some("k"))).map(_.taskId)
        p <- Rows.query[Long](s"SELECT min(id) FROM ${db.schema("tasks")}").map(_.head)
        _ <- q.enqueue(NewTask("dependent", orderingKey = Some("k"), after = Vector(After.completed(p))))
        _ <- q.enqueue(NewTask("later", orderingKey = Some("k")))
        ran <- cats.effect.Ref[IO].of(Vector.empty[String])
        _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("q")) {
          source =>
            Pipeline(source).process { job =>
              ran.update(_ :+ job.payload) *>
                // the parent holds on until the key's first task has run: the dependent is then the key's
                // head, held back by its parent alone, and "later" must not overtake it
                Eventually.until(
                  "the first task of the key ran",
                  ran.get,
                  20.seconds
                )(_.contains("first")).void
                  .whenA(job.payload == "p")
            }.withLimit(weir.Limit.fixed(4))
        })
        order <- ran.get
      yield
        assertEquals(order.filter(_ != "p"), Vector("first", "dependent", "later"))
        assert(order.indexOf("p") < order.indexOf("dependent"), order.toString)
  }

  withDb(
    "a dependent in another queue starts on the notification of its release, whatever its poll interval"
  ) {
    db =>
      val parents = TaskQueue[IO, String](db, "parents")
      val children = TaskQueue[IO, String](db, "children")
      // paused without a notification, so that the idle worker's claims count as held back; then resumed
      // the same way: only a notification can wake it afterwards within the test's time
      def setPaused(paused: Boolean) =
        new ControlSql(db.schema).set("children", ControlSql.Change(paused = Some(paused))).update.run
          .transact(db.transactor).void
      val hourPoll =
        WorkerConfig(queue = "children", pollInterval = 1.hour, heartbeat = 5.seconds, deadAfter = 20.seconds)
      for
        p <- parents.enqueue(NewTask("p")).map(_.taskId)
        child <- children.enqueue(NewTask("child", after = Vector(After.completed(p)))).map(_.taskId)
        started <- Deferred[IO, Long]
        _ <- setPaused(true)
        ran <- DurableWorker.start[IO, String, Unit](db, hourPoll)(source =>
          Pipeline(source).process(job => started.complete(job.id).void)
        ).use { w =>
          Eventually.until("the idle worker's two startup claims", w.stats, 20.seconds, 20.millis)(
            _.heldBack >= 2
          ) *> setPaused(false) *>
            TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](
              db,
              TestWorkers.config("parents")
            )(source => Pipeline(source).process(_ => IO.unit))) *>
            started.get.timeoutTo(20.seconds, IO(fail("the release did not wake the child's worker")))
        }
      yield assertEquals(ran, child)
  }

  withDb(
    "the SQL function takes parents by id, and refuses an unknown one, a NULL and a parent named twice"
  ) {
    db =>
      val f = db.schema("enqueue")
      for
        p <- Rows.enqueueSql(s"$f('q', '1')").map(_._1)
        c <- Rows.enqueueSql(s"$f('q', '2', after => ARRAY[$p]::bigint[])").map(_._1)
        d <- Rows.enqueueSql(s"$f('q', '3', after => ARRAY[$p], after_any_outcome => ARRAY[$c])").map(_._1)
        edges <- Rows.query[(Long, Long, Boolean)](
          s"SELECT parent, child, any_outcome FROM ${db.schema("dependencies")} ORDER BY parent, child"
        )
        live <- states(db, p, c, d).transact(TestDatabase.admin)
        unknown <- Rows.enqueueSql(s"$f('q', '4', after => ARRAY[424242]::bigint[])").attempt
        nulls <- Rows.enqueueSql(s"$f('q', '4', after => ARRAY[$p, NULL])").attempt
        twice <- Rows.enqueueSql(s"$f('q', '4', after => ARRAY[$p], after_any_outcome => ARRAY[$p])").attempt
      yield
        assertEquals(edges, Vector((p, c, false), (p, d, false), (c, d, true)))
        assertEquals(live, Vector(("available", 0), ("waiting", 1), ("waiting", 2)))
        def refused(r: Either[Throwable, (Long, Boolean)], state: String, text: String) = r match
          case Left(e: java.sql.SQLException) =>
            assertEquals(e.getSQLState, state)
            assert(e.getMessage.contains(text), e.getMessage)
          case other => fail(s"expected an SQLException, got $other")
        refused(unknown, "23503", "waits for unknown task(s) 424242")
        refused(nulls, "22004", "must not hold NULL")
        refused(twice, "22023", s"task $p is named twice")
  }
