package weir.postgres

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.Pipeline
import weir.postgres.internal.Sql

/** Rescue and the guards on every finish, with rows planted on either side of the deadlines. */
class RescueSuite extends DbSuite:

  private def run[A](db: Database[IO], io: ConnectionIO[A]): IO[A] = io.transact(db.transactor)

  withDb(
    "only tasks of workers whose heartbeat is older than deadAfter, or whose lease expired when the leases are looked at, are rescued"
  ) { db =>
    val sql = new Sql(db.schema)
    val queue = TaskQueue[IO, Int](db, "r")
    val w = db.schema("workers")
    for
      _ <- queue.enqueueMany((1 to 4).map(NewTask(_)))
      alive <- run(db, sql.register("alive", 1000))
      late <- run(db, sql.register("late", 1000))
      gone <- run(db, sql.register("gone", 1000))
      expired <- run(db, sql.register("expired-lease", 1000))
      _ <- run(db, sql.claim("r", alive, 1, 60000).map(_.rows))
      _ <- run(db, sql.claim("r", late, 1, 60000).map(_.rows))
      _ <- run(db, sql.claim("r", gone, 1, 60000).map(_.rows))
      _ <- run(db, sql.claim("r", expired, 1, 60000).map(_.rows))
      // deadAfter = 10 s: one worker 9 s silent (alive), one 11 s (dead); one row deleted; one lease expired
      _ <- Rows.exec(s"UPDATE $w SET heartbeat_at = now() - interval '9 seconds' WHERE id = $alive")
      _ <- Rows.exec(s"UPDATE $w SET heartbeat_at = now() - interval '11 seconds' WHERE id = $late")
      _ <- Rows.exec(s"DELETE FROM $w WHERE id = $gone")
      _ <- Rows.exec(
        s"UPDATE ${db.schema("tasks")} SET lease_expires_at = now() - interval '1 second' WHERE lease_owner = $expired"
      )
      // without the leases' look first: the gone owners' tasks only
      owners <- run(db, sql.rescue(10000, 1000, leases = false))
      afterOwners <- Rows.tasks(db)
      leases <- run(db, sql.rescue(10000, 1000, leases = true))
      rows <- Rows.tasks(db)
    yield
      assertEquals((owners, leases), ((2, 0, 0), (1, 0, 0)))
      assertEquals(afterOwners.filter(_._2 == "running").flatMap(_._4).toSet, Set(alive, expired))
      val byOwner = rows.groupBy(_._4)
      assertEquals(byOwner.get(Some(alive)).map(_.size), Some(1))
      val freed = rows.filter(_._2 == "available")
      assertEquals(freed.size, 3)
      assert(freed.forall(_._3 == 1), "a rescued task keeps its attempt counted")
      assert(freed.exists(_._5.contains(s"worker $late stopped heartbeating")), freed.toString)
      assert(freed.exists(_._5.contains(s"worker $gone stopped heartbeating")), freed.toString)
      assert(freed.exists(_._5.contains("lease expired")), freed.toString)
  }

  withDb(
    "a worker whose session lock is free and whose heartbeat is a period late is rescued before deadAfter; a held lock, a lock older than the server, no lock or a punctual heartbeat wait for deadAfter"
  ) { db =>
    val sql = new Sql(db.schema)
    val queue = TaskQueue[IO, Int](db, "s")
    val w = db.schema("workers")
    val names = Vector("ended", "held", "before-restart", "no-session", "punctual")
    // a session of the test's own holds the lock of "held", as its live worker's session would
    def holding(owner: Long): Resource[IO, Unit] =
      db.dedicated.evalMap(c =>
        IO.blocking {
          val st = c.createStatement()
          try st.execute(s"SELECT pg_advisory_lock(${db.schema.sessionLockClass}, $owner)"): Unit
          finally st.close()
        }
      )
    for
      _ <- queue.enqueueMany((1 to names.size).map(NewTask(_)))
      owners <- names.traverse(name => run(db, sql.register(name, 1000)))
      _ <- owners.traverse(owner => run(db, sql.claim("s", owner, 1, 60000).map(_.rows)))
      byName = names.zip(owners).toMap
      // every heartbeat 2 s old (two periods) except the punctual one's, far from deadAfter = 1 minute
      _ <- Rows.exec(s"UPDATE $w SET heartbeat_at = now() - interval '2 seconds', session_since = now()")
      _ <- Rows.exec(
        s"UPDATE $w SET session_since = pg_postmaster_start_time() - interval '1 second' WHERE id = ${byName("before-restart")}"
      )
      _ <- Rows.exec(s"UPDATE $w SET session_since = NULL WHERE id = ${byName("no-session")}")
      // the punctual heartbeat beats right before the rescue, once the lock is held: opening the holding
      // session on a loaded machine must not age it past its period
      punctual = Rows.exec(s"UPDATE $w SET heartbeat_at = now() WHERE id = ${byName("punctual")}")
      rescued <-
        holding(byName("held")).surround(punctual *> run(db, sql.rescue(60000, 1000, leases = false)))
      rows <- Rows.tasks(db)
      // the same rows with deadAfter below the late heartbeats: every late one goes, whatever its lock
      late <- punctual *> run(db, sql.rescue(1500, 1000, leases = false))
    yield
      assertEquals(rescued, (1, 0, 0))
      val freed = rows.filter(_._2 == "available")
      assertEquals(freed.size, 1, rows.toString)
      assert(freed.head._5.contains(s"worker ${byName("ended")} lost its database session"), freed.toString)
      assertEquals(rows.filter(_._2 == "running").flatMap(_._4).toSet, owners.toSet - byName("ended"))
      assertEquals(late, (3, 0, 0))
  }

  withDb(
    "whatever the queues and owners, a rescue without the leases' look frees exactly the running tasks of the gone owners (25 draws)"
  ) { db =>
    val sql = new Sql(db.schema)
    val w = db.schema("workers")
    // each draw in queues of its own; the earlier draws' running tasks belong to live owners and stay put
    (1 to 25).toVector.traverse_ { seed =>
      val rnd = new scala.util.Random(seed.toLong)
      val queues = Vector.tabulate(1 + rnd.nextInt(4))(q => s"p$seed-$q")
      val fates = Vector.fill(1 + rnd.nextInt(6))(rnd.nextInt(3)) // 0 alive, 1 late, 2 no row
      // tasks per (queue, owner), and some never claimed
      val held = for q <- queues.indices; o <- fates.indices yield (q, o, rnd.nextInt(4))
      val idle = queues.map(_ => rnd.nextInt(3))
      for
        owners <- fates.indices.toVector.traverse(o => run(db, sql.register(s"p$seed-$o", 1000)))
        _ <- queues.zipWithIndex.traverse_ { (queue, q) =>
          val n = held.filter(_._1 == q).map(_._3).sum + idle(q)
          TaskQueue[IO, Int](db, queue).enqueueMany((1 to n).map(NewTask(_))).void
        }
        _ <- held.toVector.traverse_ { (q, o, n) =>
          run(db, sql.claim(queues(q), owners(o), n, 600000).map(_.rows)).void.whenA(n > 0)
        }
        _ <- fates.zip(owners).traverse_ {
          case (1, id) =>
            Rows.exec(s"UPDATE $w SET heartbeat_at = now() - interval '2 hours' WHERE id = $id").void
          case (2, id) => Rows.exec(s"DELETE FROM $w WHERE id = $id").void
          case _ => IO.unit
        }
        rescued <- run(db, sql.rescue(3600000, 1000, leases = false))
        rows <- Rows.query[(String, String, Option[Long])](
          s"SELECT queue, state::text, lease_owner FROM ${db.schema("tasks")} WHERE queue LIKE 'p$seed-%'"
        )
      yield
        val gone = fates.indices.filter(fates(_) != 0).map(owners).toSet
        val expected = held.filter((_, o, _) => fates(o) != 0).map(_._3).sum
        assertEquals(rescued, (expected, 0, 0), s"seed $seed")
        val running = rows.filter(_._2 == "running")
        assert(
          running.forall(_._3.exists(o => !gone(o))),
          s"seed $seed: a gone owner still runs a task: $rows"
        )
        val live = held.filter((_, o, _) => fates(o) == 0)
        assertEquals(
          running.groupBy(r => (r._1, r._3)).view.mapValues(_.size).toMap,
          live.filter(_._3 > 0).map((q, o, n) => (queues(q), Some(owners(o))) -> n).toMap,
          s"seed $seed"
        )
    }
  }

  withDb("a late finish after a rescue changes nothing, and a rescue after a completion finds nothing") {
    db =>
      val sql = new Sql(db.schema)
      val queue = TaskQueue[IO, Int](db, "g")
      val w = db.schema("workers")
      for
        _ <- queue.enqueueMany(Vector(NewTask(1), NewTask(2)))
        owner <- run(db, sql.register("w", 1000))
        claimed <- run(db, sql.claim("g", owner, 2, 60000).map(_.rows))
        first = claimed.head
        second = claimed(1)
        // the second completes first, then the worker is declared dead
        completed <- run(db, sql.complete(Array(second.token), keep = true, keyed = false))
        _ <- Rows.exec(s"UPDATE $w SET heartbeat_at = now() - interval '1 hour' WHERE id = $owner")
        rescued <- run(db, sql.rescue(10000, 1000, leases = true))
        // the late finisher of the first: complete, fail and release must all be refused
        lateComplete <- run(db, sql.complete(Array(first.token), keep = true, keyed = false))
        lateFail <- run(db, sql.fail(Array(first.token), Array("late"), Array(0L)))
        lateRelease <- run(db, sql.handBack(Array(first.token)))
        // another worker claims the rescued task: attempt 2; the first claim's finish is still refused
        other <- run(db, sql.register("other", 1000))
        again <- run(db, sql.claim("g", other, 2, 60000).map(_.rows))
        stale <- run(db, sql.complete(Array(first.token), keep = true, keyed = false))
        fresh <- run(db, sql.complete(Array(again.head.token), keep = true, keyed = false))
        done <- Rows.finished(db)
      yield
        assertEquals(completed, 1)
        assertEquals(rescued, (1, 0, 0))
        assertEquals((lateComplete, lateFail, lateRelease), (0, (0, 0, 0), (0, 0)))
        assertEquals(again.map(_.id), Vector(first.id))
        assertEquals(again.head.attempt, 2)
        assertEquals((stale, fresh), (0, 1))
        assertEquals(done.map(d => (d._2, d._3)), Vector(("completed", 2), ("completed", 1)))
  }

  withDb("a task whose attempts are used up is moved to dead by the rescue, with the reason") { db =>
    val sql = new Sql(db.schema)
    val queue = TaskQueue[IO, Int](db, "x")
    for
      _ <- queue.enqueue(NewTask(1, maxAttempts = 1))
      owner <- run(db, sql.register("w", 1000))
      _ <- run(db, sql.claim("x", owner, 1, 60000).map(_.rows))
      _ <- Rows.exec(s"DELETE FROM ${db.schema("workers")} WHERE id = $owner")
      rescued <- run(db, sql.rescue(10000, 1000, leases = true))
      done <- Rows.finished(db)
    yield
      assertEquals(rescued, (0, 1, 0))
      assertEquals(done.map(_._2), Vector("dead"))
      assert(done.head._4.contains("stopped heartbeating"), done.head._4)
  }

  withDb("a running worker rescues the tasks of a worker that stopped heartbeating and completes them") {
    db =>
      val sql = new Sql(db.schema)
      val queue = TaskQueue[IO, Int](db, "live")
      for
        _ <- queue.enqueueMany((1 to 5).map(NewTask(_)))
        dead <- run(db, sql.register("dead", 1000))
        _ <- run(db, sql.claim("live", dead, 5, 600000).map(_.rows))
        _ <- Rows.exec(
          s"UPDATE ${db.schema("workers")} SET heartbeat_at = now() - interval '1 hour' WHERE id = $dead"
        )
        config = TestWorkers.config("live")
        stats <- TestWorkers.statsAfterRun(
          DurableWorker.start[IO, Int, Unit](db, config)(Pipeline(_).process(_ => IO.unit))
        )
        done <- Rows.finished(db)
      yield
        assertEquals(stats.rescued, 5L)
        assertEquals(done.map(d => (d._2, d._3)), Vector.fill(5)(("completed", 2)))
  }
