package weir.postgres

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*
import weir.{Limit, Pipeline}

import scala.concurrent.duration.*

/**
 * A worker taken for dead while alive never starts a claim that was rescued from it: its heartbeat is held
 * up (its row locked by the test) past `deadAfter` while it holds prefetched claims; another worker rescues
 * and runs them; when the first one could go on, it refuses every one of them and hands them back.
 */
class RevokedClaimSuite extends DbSuite:

  /** A transaction of the test's own holding `owner`'s row in `workers`: its heartbeat waits for it. */
  private def holdRow(db: Database[IO], owner: Long): Resource[IO, Unit] =
    Resource
      .make(IO.blocking {
        val (jdbc, props) = DatabaseConfig.toJdbc(TestDatabase.url)
        val c = java.sql.DriverManager.getConnection(jdbc, props)
        c.setAutoCommit(false)
        val st = c.createStatement()
        try st.executeQuery(s"SELECT 1 FROM ${db.schema("workers")} WHERE id = $owner FOR UPDATE").close()
        finally st.close()
        c
      })(c => IO.blocking { c.rollback(); c.close() })
      .void

  /** `read` until `done`, at most 60 s; a timeout names `what` and the last value read. */
  private def poll[A](what: String)(read: IO[A])(done: A => Boolean): IO[A] =
    Ref[IO].of(Option.empty[A]).flatMap { last =>
      def loop: IO[A] =
        read.flatTap(a => last.set(Some(a))).flatMap(a =>
          if done(a) then IO.pure(a) else IO.sleep(20.millis) *> loop
        )
      loop.timeoutTo(
        60.seconds,
        last.get.flatMap(a => IO.raiseError(new AssertionError(s"waited 60 s for $what: $a")))
      )
    }

  withDb("a worker whose heartbeat was held up past deadAfter starts none of the claims rescued from it") {
    db =>
      val queue = TaskQueue[IO, Int](db, "rv")
      // beats every 500 ms, a claim starting while the last is younger than 750 ms: a loaded machine's late
      // beat may still refuse a first batch before the test holds the row (handed back, claimed again), so
      // the counts below are taken from the moment the worker holds all 20 tasks with one of them running
      val config = TestWorkers.config("rv")
        .copy(stopWhenEmpty = false, claimBatch = 20, heartbeat = 1.second, deadAfter = 3.seconds)
      for
        _ <- queue.enqueueMany((1 to 20).map(NewTask(_)))
        runs <- Ref[IO].of(Vector.empty[(Int, String)])
        gate <- IO.deferred[Unit]
        firstRunning <- IO.deferred[Unit]
        slow = DurableWorker.start[IO, Int, Unit](db, config) { source =>
          Pipeline(source).process { job =>
            runs.update(_ :+ (job.payload -> "slow")) *> firstRunning.complete(()) *> gate.get
          }.withLimit(Limit.fixed(1))
        }
        rescuer = DurableWorker.start[IO, Int, Unit](db, config) { source =>
          Pipeline(
            source
          ).process(job => runs.update(_ :+ (job.payload -> "rescuer"))).withLimit(Limit.fixed(4))
        }
        result <- slow.use { a =>
          for
            _ <- firstRunning.get
            before <- poll("20 claims held")(a.stats)(s => s.claimed - s.handedBack == 20L)
            stats <- holdRow(db, a.id).use { _ =>
              rescuer.use { _ =>
                for
                  // every task of the slow worker was rescued and run again by the other one
                  _ <- poll("20 finished")(Rows.count(db, "finished"))(_ == 20L)
                  _ <- gate.complete(())
                  // its claims still in its buffer now come up, and refuse: its heartbeat has not committed
                  stats <- poll("19 refused")(a.stats)(_.refused == before.refused + 19L)
                yield (before, stats)
              }
            }
          yield stats
        }
        ran <- runs.get
        finished <- Rows.finished(db)
      yield
        val slowRuns = ran.filter(_._2 == "slow")
        // the one task the slow worker started, before it was taken for dead; nothing after
        assertEquals(slowRuns.size, 1, ran.toString)
        assertEquals(ran.filter(_._2 == "rescuer").map(_._1).sorted, (1 to 20).toVector)
        assertEquals(finished.map(_._2).distinct, Vector("completed"))
        assertEquals(finished.size, 20)
        // refused, and handed back for nothing: the rescuer had finished them
        val (before, after) = result
        assertEquals(
          (after.refused - before.refused, after.completed, after.handedBack - before.handedBack),
          (19L, 0L, 0L)
        )
  }
