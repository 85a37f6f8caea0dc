package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*

import scala.concurrent.duration.*

class EnqueueSuite extends DbSuite:

  withDb("a batch returns one result per task, in order, with ids in enqueue order") { db =>
    val queue = TaskQueue[IO, String](db, "batch")
    for
      results <- queue.enqueueMany((1 to 12000).map(i => NewTask(s"t$i", priority = i % 3)))
      rows <- Rows.count(db, "tasks", "queue = 'batch'")
    yield
      assertEquals(results.size, 12000)
      assert(results.forall(_.isInstanceOf[Enqueued.Inserted]))
      val ids = results.map(_.taskId)
      assertEquals(ids, ids.sorted)
      assertEquals(ids.distinct.size, ids.size)
      assertEquals(rows, 12000L)
  }

  withDb("a duplicate unique key inserts nothing and names the task that holds it, in a batch and alone") {
    db =>
      val queue = TaskQueue[IO, Int](db, "unique")
      for
        first <- queue.enqueue(NewTask(1, uniqueKey = Some("k1")))
        again <- queue.enqueue(NewTask(2, uniqueKey = Some("k1")))
        batch <- queue.enqueueMany(
          Vector(
            NewTask(3, uniqueKey = Some("k2")),
            NewTask(4, uniqueKey = Some("k1")),
            NewTask(5, uniqueKey = Some("k2")),
            NewTask(6)
          )
        )
        rows <- Rows.count(db, "tasks")
      yield
        assert(first.isInstanceOf[Enqueued.Inserted], first.toString)
        assertEquals(again, Enqueued.Duplicate(first.taskId))
        batch match
          case Vector(
                Enqueued.Inserted(k2),
                Enqueued.Duplicate(k1),
                Enqueued.Duplicate(k2b),
                Enqueued.Inserted(_)
              ) =>
            assertEquals(k1, first.taskId)
            assertEquals(k2b, k2)
          case other => fail(s"unexpected batch results: $other")
        assertEquals(rows, 3L)
  }

  withDb("concurrent enqueuers of the same unique keys insert each key once and all agree on its holder") {
    db =>
      val queue = TaskQueue[IO, Int](db, "race")
      val keys = (1 to 50).map(k => s"key-$k")
      val enqueuer = (e: Int) =>
        keys.toVector.traverse(k => queue.enqueue(NewTask(e, uniqueKey = Some(k)))).map(keys.zip(_).toMap)
      for
        all <- (1 to 6).toList.parTraverse(enqueuer)
        rows <- Rows.count(db, "tasks")
      yield
        assertEquals(rows, keys.size.toLong)
        keys.foreach { k =>
          val results = all.map(_(k))
          assertEquals(results.count(_.isInstanceOf[Enqueued.Inserted]), 1, s"inserts of $k")
          assertEquals(results.map(_.taskId).distinct.size, 1, s"holders of $k")
        }
  }

  withDb("an enqueue inside the caller's transaction exists if and only if the transaction commits") { db =>
    val queue = TaskQueue[IO, String](db, "outbox")
    val table = db.schema("orders_for_test")
    val create = Fragment.const(s"CREATE TABLE $table (id int PRIMARY KEY)").update.run
    def order(id: Int) = Fragment.const(s"INSERT INTO $table VALUES ($id)").update.run
    for
      _ <- create.transact(db.transactor)
      _ <- (order(1) *> queue.enqueueIn(NewTask("ship 1"))).transact(db.transactor)
      rolledBack <-
      (order(2) *> queue.enqueueIn(NewTask("ship 2")) *> FC.raiseError[Unit](new RuntimeException("abort")))
        .transact(db.transactor)
        .attempt
      orders <- Fragment.const(s"SELECT count(*) FROM $table").query[Long].unique.transact(TestDatabase.admin)
      tasks <- Rows.count(db, "tasks")
    yield
      assert(rolledBack.isLeft)
      assertEquals(orders, 1L)
      assertEquals(tasks, 1L)
  }

  withDb("the SQL function enqueues from plain SQL with defaults, priorities, delays and unique keys") { db =>
    val f = db.schema("enqueue")
    for
      a <- Rows.enqueueSql(s"""$f('mail', '{"to": "a@b.c"}')""")
      b <- Rows.enqueueSql(
        s"""$f('mail', '{"to": "d@e.f"}', priority => 1, run_at => now() + interval '1 hour', unique_key => 'u')"""
      )
      c <- Rows.enqueueSql(s"""$f('mail', '{"to": "g@h.i"}', unique_key => 'u')""")
      delayed <- Rows.count(db, "tasks", "run_at > now() + interval '59 minutes' AND priority = 1")
    yield
      assert(a._2 && b._2, (a, b).toString)
      assertEquals(c, (b._1, false))
      assertEquals(delayed, 1L)
  }

  withDb("an enqueue of bad tasks fails in its effect naming every value, and inserts nothing") { db =>
    val queue = TaskQueue[IO, Int](db, "bad")
    val unnamed = TaskQueue[IO, Int](db, "")
    for
      one <- queue.enqueue(NewTask(1, maxAttempts = 0, delay = -2.seconds)).intercept[weir.InvalidSettings]
      many <- queue
        .enqueueMany(Vector(NewTask(1), NewTask(2, priority = 70000), NewTask(3, orderingKey = Some(""))))
        .intercept[weir.InvalidSettings]
      noName <- unnamed.enqueue(NewTask(1)).intercept[weir.InvalidSettings]
      rows <- Rows.count(db, "tasks", "queue IN ('bad', '')")
    yield
      assertEquals(
        one.getMessage,
        "invalid NewTask: delay must be >= 0, was: -2 seconds; maxAttempts must be >= 1, was: 0"
      )
      assertEquals(
        many.errors,
        List(
          "task 1: priority must fit in a smallint, was: 70000",
          "task 2: orderingKey must not be empty, was: \"\""
        )
      )
      assertEquals(noName.errors, List("queue name must not be empty, was: ''"))
      assertEquals(rows, 0L)
  }

  test("NewTask names its bad values without throwing") {
    assertEquals(NewTask(1, maxAttempts = 0).errors, List("maxAttempts must be >= 1, was: 0"))
    assertEquals(NewTask(1, delay = -1.second).errors, List("delay must be >= 0, was: -1 seconds"))
    assertEquals(NewTask(1, priority = 40000).errors, List("priority must fit in a smallint, was: 40000"))
    assertEquals(
      NewTask(1).copy(maxAttempts = 0, uniqueKey = Some("")).errors,
      List("maxAttempts must be >= 1, was: 0", "uniqueKey must not be empty, was: \"\"")
    )
  }
