package weir.postgres

import cats.effect.IO
import doobie.implicits.*
import weir.postgres.internal.Sql

import java.time.Instant

class ClaimSuite extends DbSuite:

  withDb("a claim returns its tasks by priority, then run-at, then id, each with its creation time") { db =>
    val sql = new Sql(db.schema)
    val q = TaskQueue[IO, Int](db, "c")
    for
      before <- IO.realTimeInstant
      // one statement: every task has the same run-at, so the order is priority, then id
      ids <- q.enqueueMany((1 to 30).map(i => NewTask(i, priority = (i * 7) % 3))).map(_.map(_.taskId))
      after <- IO.realTimeInstant
      owner <- sql.register("w", 1000).transact(db.transactor)
      claimed <- sql.claim("c", owner, 30, 60000).map(_.rows).transact(db.transactor)
    yield
      val expected = ids.zip(1 to 30).map((id, i) => (((i * 7) % 3), id)).sorted.map(_._2)
      assertEquals(claimed.map(_.id), expected)
      val slack = java.time.Duration.ofSeconds(5)
      claimed.foreach { c =>
        val at: Instant = c.createdAt
        assert(!at.isBefore(before.minus(slack)) && !at.isAfter(after.plus(slack)), s"created at $at")
      }
  }

  // the claim of this release, and that of the previous one, which its workers call during an upgrade
  Vector("claim_with_headers", "claim").foreach { function =>
    withDb(
      s"$function planned on statistics that say the table is empty still reads the claim index in order"
    ) {
      db =>
        val sql = new Sql(db.schema)
        val q = TaskQueue[IO, Int](db, "stale")
        val tasks = db.schema("tasks")
        def connect() =
          val (jdbc, props) = DatabaseConfig.toJdbc(TestDatabase.url)
          java.sql.DriverManager.getConnection(jdbc, props)
        // the statistics of a queue analyzed while it was empty (pages left, no live row), then a burst. The
        // server's autovacuum is off for the table first: its vacuum after the delete (or its analyze after
        // the inserts, finishing late) would write the live rows it counted over the planted statistics
        def onTasks(statements: String*) = IO.blocking {
          val c = connect()
          try
            val st = c.createStatement()
            statements.foreach(st.execute(_): Unit)
          finally c.close()
        }
        val emptied =
          onTasks(s"ALTER TABLE $tasks SET (autovacuum_enabled = false)") *>
            q.enqueueMany((1 to 5000).map(NewTask(_))) *>
            onTasks(s"DELETE FROM $tasks", s"ANALYZE $tasks")
        // the plan of the claim's statement, as auto_explain reports it to the client
        def claimWithPlan(owner: Long): IO[(Vector[Long], Vector[String])] = IO.blocking {
          val c = connect()
          try
            val st = c.createStatement()
            st.execute(
              "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; " +
                "SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice"
            )
            val rs = st.executeQuery(
              s"SELECT c.id FROM ${db.schema(function)}('stale', $owner, 500, 60000) AS c"
            )
            val ids = Vector.newBuilder[Long]
            while rs.next() do ids += rs.getLong(1)
            val notes =
              Iterator.iterate(st.getWarnings)(_.getNextWarning).takeWhile(_ != null).map(_.getMessage)
            (ids.result(), notes.toVector)
          finally c.close()
        }
        for
          _ <- emptied
          // a parent that completed, whose 300 dependents wait in the queue: a claim takes them from `waiting`,
          // through the arm of dependents, which these statistics would plan on `tasks_waiting_for_parents` (the
          // queue's waiting tasks: smaller than `tasks_waits_on`, so cheaper on paper), read whole, then sorted
          parent <- TaskQueue[IO, Int](db, "parents").enqueue(NewTask(0)).map(_.taskId)
          dependents <-
            q.enqueueMany((1 to 300).map(i => NewTask(i, after = Vector(After.completed(parent)))))
              .map(_.map(_.taskId))
          ids <- q.enqueueMany((1 to 20000).map(NewTask(_))).map(_.map(_.taskId))
          owner <- sql.register("w", 1000).transact(db.transactor)
          parentClaim <- sql.claim("parents", owner, 1, 60000).transact(db.transactor)
          _ <- sql.complete(Array(parentClaim.rows.head.token), keep = false, keyed = false)
            .transact(db.transactor)
          stats <- sql"SELECT reltuples::bigint FROM pg_class WHERE oid = ${tasks}::regclass"
            .query[Long].unique.transact(db.transactor)
          claimed <- claimWithPlan(owner)
        yield
          val (claimedIds, notes) = claimed
          val plan = notes.mkString("\n")
          assertEquals(stats, 0L, "the planted statistics say the table is empty")
          assertEquals(parentClaim.rows.map(_.id), Vector(parent))
          // the dependents first: enqueued before the others, as due and as urgent
          assertEquals(claimedIds, dependents ++ ids.take(200))
          // the claim's statement, up to the next statement's plan
          val inner = plan.linesIterator.dropWhile(!_.contains("WITH avail")).drop(1)
            .takeWhile(!_.startsWith("duration:")).mkString("\n")
          assert(inner.contains("Index Scan using tasks_claim"), plan)
          assert(!inner.contains("Bitmap") && !inner.contains("Seq Scan"), plan)
          // its one nested loop is the arm of dependents taken from `waiting`: each completed parent of the
          // queue, then its dependents
          assertEquals(inner.linesIterator.count(_.contains("Nested Loop")), 1, plan)
          // the parent's dependents are looked up twice, each through their index in the claim's order (no
          // sort), in statements of their own (`ready_dependents`; `dependents_wait`, after the claim took some)
          val lookUps = notes.filter(_.contains("t.waits_on = p_parent"))
          assertEquals(lookUps.count(_.contains("FOR UPDATE OF t SKIP LOCKED")), 1, plan)
          assertEquals(lookUps.count(_.contains("LIMIT 1 OFFSET 0")), 1, plan)
          lookUps.foreach(p => assert(p.contains("Scan using tasks_waits_on") && !p.contains("Sort"), plan))
          assert(notes.forall(!_.contains("tasks_waiting_for_parents")), plan)
    }
  }
