package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.implicits.*
import weir.postgres.internal.Sql

/**
 * A dependent with one parent and no key that needs its parent completed has no edge (migration 19): its
 * parent, marked `waited_on`, finds it at its end through `tasks_waits_on`. Completed, the parent names it for its queue's claims; dead
 * or cancelled, it is cancelled naming the parent, and so are its own such dependents, level by level, however
 * long the chain. An edge written the way migration 18 wrote one (an earlier release's enqueue) is settled as
 * before, without a second outcome.
 */
class OneParentWithoutEdgesSuite extends DbSuite:

  private def claim(sql: Sql, queue: String): IO[Vector[Sql.Claimed]] =
    sql.claim(queue, 1L, 1000, 60000L).transact(TestDatabase.admin).map(_.rows)

  private def complete(sql: Sql, rows: Vector[Sql.Claimed]): IO[Unit] =
    sql.complete(rows.map(_.token).toArray, keep = false, keyed = false).transact(TestDatabase.admin).void

  private def failForGood(sql: Sql, rows: Vector[Sql.Claimed]): IO[Unit] =
    sql.fail(rows.map(_.token).toArray, rows.map(_ => "boom").toArray, rows.map(_ => -1L).toArray)
      .transact(TestDatabase.admin).void

  private def edges(db: Database[IO]): IO[Vector[(Long, Long, Boolean, Option[String])]] =
    Rows.query[(Long, Long, Boolean, Option[String])](
      s"SELECT parent, child, any_outcome, child_queue FROM ${db.schema("dependencies")} ORDER BY child"
    )

  private def ends(db: Database[IO], queue: String): IO[Vector[(Long, String, String)]] =
    Rows.query[(Long, String, String)](
      s"SELECT id, state::text, errors::text FROM ${db.schema("finished")} WHERE queue = '$queue' ORDER BY id"
    )

  withDb(
    "only the edges a count or an outcome needs are written; a completed parent makes the rest claimable"
  ) {
    db =>
      val q = TaskQueue[IO, String](db, "ow")
      val sql = new Sql(db.schema)
      for
        p <- q.enqueue(NewTask("p")).map(_.taskId)
        other <- q.enqueue(NewTask("other")).map(_.taskId)
        strict <- q.enqueue(NewTask("strict", after = Vector(After.completed(p)))).map(_.taskId)
        anyway <- q.enqueue(NewTask("anyway", after = Vector(After.finished(p)))).map(_.taskId)
        keyed <-
          q.enqueue(NewTask(
            "keyed",
            orderingKey = Some("k"),
            after = Vector(After.completed(p))
          )).map(_.taskId)
        both <-
          q.enqueue(NewTask("both", after = Vector(After.completed(p), After.completed(other)))).map(_.taskId)
        written <- edges(db)
        marked <- Rows.query[Long](s"SELECT id FROM ${db.schema("tasks")} WHERE waited_on ORDER BY id")
        first <- claim(sql, "ow")
        _ <- complete(sql, first.filter(_.id == p))
        second <- claim(sql, "ow")
        left <- edges(db)
      yield
        assertEquals(
          written,
          Vector(
            (p, anyway, true, Some("ow")),
            (p, keyed, false, None),
            (p, both, false, None),
            (other, both, false, None)
          )
        )
        // the parent that a dependent waits for without an edge is marked, so that its end looks for it
        assertEquals(marked, Vector(p))
        assertEquals(first.map(_.id).toSet, Set(p, other))
        // `both` still waits for `other`, which has not ended
        assertEquals(second.map(_.id).toSet, Set(strict, anyway, keyed))
        assertEquals(left, Vector((other, both, false, None)))
  }

  withDb("a dead root cancels a chain of 1,000 one-parent dependents, each naming the task it waited for") {
    db =>
      val q = TaskQueue[IO, String](db, "oc")
      val sql = new Sql(db.schema)
      val n = 1000
      val graph = (1 until n).foldLeft(TaskGraph.empty.add("t0", q, NewTask("t0", maxAttempts = 1))) {
        (g, i) =>
          g.add(s"t$i", q, NewTask(s"t$i"), after = Vector(After.completed(s"t${i - 1}")))
      }
      for
        enqueued <- graph.enqueue(db)
        ids = (0 until n).map(i => enqueued(s"t$i").taskId)
        written <- edges(db)
        root <- claim(sql, "oc")
        _ <- failForGood(sql, root)
        ended <- ends(db, "oc")
        live <- Rows.count(db, "tasks", "queue = 'oc'")
      yield
        assertEquals(written, Vector.empty)
        assertEquals(root.map(_.id), Vector(ids.head))
        assertEquals(live, 0L)
        assertEquals(
          ended.map(e => (e._1, e._2)),
          ids.toVector.map(id => (id, if id == ids.head then "dead" else "cancelled"))
        )
        assert(ended(1)._3.contains(s"task ${ids(0)}, which it waits for, ended dead"), ended(1)._3)
        ids.sliding(2).drop(1).zip(ended.drop(2)).foreach { case (Seq(parent, child), (id, _, errors)) =>
          assertEquals(id, child)
          assert(errors.contains(s"task $parent, which it waits for, was cancelled"), errors)
        }
  }

  withDb(
    "one statement ending a completed and a dead parent releases the first's dependent, cancels the second's"
  ) {
    db =>
      val q = TaskQueue[IO, String](db, "om")
      val sql = new Sql(db.schema)
      for
        good <- q.enqueue(NewTask("good")).map(_.taskId)
        bad <- q.enqueue(NewTask("bad", maxAttempts = 1)).map(_.taskId)
        ofGood <- q.enqueue(NewTask("of-good", after = Vector(After.completed(good)))).map(_.taskId)
        ofBad <- q.enqueue(NewTask("of-bad", after = Vector(After.completed(bad)))).map(_.taskId)
        first <- claim(sql, "om")
        byId = first.map(r => r.id -> r).toMap
        _ <-
        (sql.complete(Array(byId(good).token), keep = false, keyed = false) *>
          sql.fail(Array(byId(bad).token), Array("boom"), Array(-1L))).transact(TestDatabase.admin)
        second <- claim(sql, "om")
        ended <- ends(db, "om")
      yield
        assertEquals(second.map(_.id), Vector(ofGood))
        assertEquals(
          ended.map(e => (e._1, e._2)),
          Vector(good -> "completed", bad -> "dead", ofBad -> "cancelled")
        )
  }

  withDb("a dependent enqueued after its parent ended is claimable at once, or cancelled, as the end says") {
    db =>
      val q = TaskQueue[IO, String](db, "oa")
      val sql = new Sql(db.schema)
      for
        // each parent waited for by a task before its end, so that its row is kept in `finished`
        good <- q.enqueue(NewTask("good")).map(_.taskId)
        bad <- q.enqueue(NewTask("bad", maxAttempts = 1)).map(_.taskId)
        _ <- q.enqueue(NewTask("early", after = Vector(After.completed(good), After.completed(bad))))
        first <- claim(sql, "oa")
        byId = first.map(r => r.id -> r).toMap
        _ <- complete(sql, Vector(byId(good)))
        _ <- failForGood(sql, Vector(byId(bad)))
        late <- q.enqueue(NewTask("late", after = Vector(After.completed(good)))).map(_.taskId)
        doomed <- q.enqueue(NewTask("doomed", after = Vector(After.completed(bad)))).map(_.taskId)
        second <- claim(sql, "oa")
        doomedEnd <- ends(db, "oa").map(_.filter(_._1 == doomed))
      yield
        assertEquals(second.map(_.id), Vector(late))
        assertEquals(doomedEnd.map(_._2), Vector("cancelled"))
        assert(doomedEnd.head._3.contains(s"task $bad, which it waits for, ended dead"), doomedEnd.head._3)
  }

  withDb("a graph's one-parent dependent of a task whose unique key is held waits for the holder, marked") {
    db =>
      val q = TaskQueue[IO, String](db, "oh")
      val sql = new Sql(db.schema)
      for
        holder <- q.enqueue(NewTask("holder", uniqueKey = Some("u"))).map(_.taskId)
        enqueued <- TaskGraph.empty
          .add("dup", q, NewTask("dup", uniqueKey = Some("u")))
          .add("child", q, NewTask("child"), after = Vector(After.completed("dup")))
          .enqueue(db)
        child = enqueued("child").taskId
        marked <- Rows.query[Long](s"SELECT id FROM ${db.schema("tasks")} WHERE waited_on ORDER BY id")
        first <- claim(sql, "oh")
        _ <- complete(sql, first)
        second <- claim(sql, "oh")
      yield
        assertEquals(enqueued("dup"), Enqueued.Duplicate(holder))
        assertEquals(marked, Vector(holder))
        assertEquals(first.map(_.id), Vector(holder))
        assertEquals(second.map(_.id), Vector(child))
  }

  withDb("an edge written as migration 18 wrote it is settled once, whatever its parent's end") { db =>
    val q = TaskQueue[IO, String](db, "oe")
    val sql = new Sql(db.schema)
    def oldEdge(parent: Long, child: Long) =
      Rows.exec(
        s"INSERT INTO ${db.schema("dependencies")} (parent, child, any_outcome, child_queue) VALUES ($parent, $child, false, 'oe')"
      )
    for
      good <- q.enqueue(NewTask("good")).map(_.taskId)
      bad <- q.enqueue(NewTask("bad", maxAttempts = 1)).map(_.taskId)
      ofGood <- q.enqueue(NewTask("of-good", after = Vector(After.completed(good)))).map(_.taskId)
      ofBad <- q.enqueue(NewTask("of-bad", after = Vector(After.completed(bad)))).map(_.taskId)
      // as an earlier release enqueued them: an edge naming the child's queue, the parent unmarked
      _ <- oldEdge(good, ofGood) *> oldEdge(bad, ofBad)
      _ <- Rows.exec(s"UPDATE ${db.schema("tasks")} SET waited_on = false")
      first <- claim(sql, "oe")
      byId = first.map(r => r.id -> r).toMap
      _ <- complete(sql, Vector(byId(good)))
      _ <- failForGood(sql, Vector(byId(bad)))
      shown <- Rows.query[(Long, String, Int)](
        s"SELECT id, state::text, parents_left FROM ${db.schema("tasks")} WHERE queue = 'oe' ORDER BY id"
      )
      second <- claim(sql, "oe")
      ended <- ends(db, "oe")
      left <- edges(db)
    yield
      // claimed from `waiting`, not counted down as well
      assertEquals(shown, Vector((ofGood, "waiting", 1)))
      assertEquals(second.map(_.id), Vector(ofGood))
      assertEquals(
        ended.map(e => (e._1, e._2)),
        Vector(good -> "completed", bad -> "dead", ofBad -> "cancelled")
      )
      assertEquals(left, Vector.empty)
  }
