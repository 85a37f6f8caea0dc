package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import org.scalacheck.Gen
import org.scalacheck.rng.Seed
import weir.InvalidSettings

import java.time.Instant
import java.time.temporal.ChronoUnit
import scala.concurrent.duration.*

class QueueOverviewSuite extends DbSuite:

  /** What [[QueueOverview.counts]] must say of `rs` for `only`, the oldest wait left out. */
  private def expected(rs: Vector[PlantedTasks.Row], cap: Int, only: Option[String]): Vector[QueueCounts] =
    rs.filter(r => only.forall(_ == r.queue)).groupBy(_.queue).toVector.sortBy(_._1).map { (queue, qs) =>
      def n(s: TaskState) = qs.count(_.state == s).toLong
      QueueCounts(
        queue,
        available = n(TaskState.Available),
        scheduled = n(TaskState.Scheduled),
        waiting = n(TaskState.Waiting),
        running = n(TaskState.Running),
        // at the cap, a count says there may be more: there are more than the cap
        finished =
          FinishedState.values.map(s => s -> CappedCount(n(s.state).min(cap), n(s.state) > cap)).toMap,
        oldestAvailable = None
      )
    }

  withDb(
    "every queue's counts by state are the tasks in each, finished ones up to the cap, of every queue or one"
  ) {
    db =>
      val overview = QueueOverview(db)
      (1 to 25).toVector.traverse_ { i =>
        val seed = Seed(200L + i)
        val rs = PlantedTasks.rows(80).pureApply(Gen.Parameters.default, seed)
        val cap = Gen.choose(1, 12).pureApply(Gen.Parameters.default, seed.next)
        for
          _ <- PlantedTasks.plant(db, rs)
          all <- overview.counts(cap)
          a <- overview.counts(cap, only = Some("a"))
          none <- overview.counts(cap, only = Some("nowhere"))
        yield
          assertEquals(
            all.map(_.copy(oldestAvailable = None)),
            expected(rs, cap, None),
            s"scenario $i, cap $cap"
          )
          assertEquals(a.map(_.copy(oldestAvailable = None)), expected(rs, cap, Some("a")), s"scenario $i")
          assertEquals(none, Vector.empty)
          // the oldest available task of each queue was due at its enqueue time, an hour or more ago
          all.foreach { q =>
            val due = rs.filter(r => r.queue == q.queue && r.state == TaskState.Available).map(_.createdAt)
            assertEquals(q.oldestAvailable.isDefined, due.nonEmpty, s"scenario $i: $q")
            q.oldestAvailable.foreach(w => assert(w >= 1.hour, s"scenario $i: $q"))
          }
      }
  }

  withDb("the counts are those of what the statements leave: claimed, completed, failed, cancelled") { db =>
    val a = TaskQueue[IO, Int](db, "a")
    val sql = new internal.Sql(db.schema)
    for
      _ <- a.enqueueMany((1 to 4).map(NewTask(_)))
      _ <- a.enqueue(NewTask(5, delay = 1.hour))
      _ <- a.enqueueMany((6 to 8).map(NewTask(_, orderingKey = Some("k"))))
      owner <- sql.register("w", 1000).transact(db.transactor)
      claimed <- sql.claim("a", owner, 3, 60000).map(_.rows).transact(db.transactor)
      _ <- sql.complete(Array(claimed(0).token), keep = true, keyed = false).transact(db.transactor)
      _ <- sql.fail(Array(claimed(1).token), Array("x"), Array(-1L)).transact(db.transactor)
      counts <- QueueOverview(db).counts()
      depths <- TaskAdmin(db).overview.depths(FinishedState.values.toSet)
    yield
      val q = counts.head
      // 4 and the key's head available, 5 scheduled, the key's two others waiting, 3 running
      assertEquals((q.queue, q.available, q.scheduled, q.waiting, q.running), ("a", 2L, 1L, 2L, 1L))
      assertEquals(
        q.finished,
        Map(
          FinishedState.Completed -> CappedCount(1, atLeast = false),
          FinishedState.Dead -> CappedCount(1, atLeast = false),
          FinishedState.Cancelled -> CappedCount(0, atLeast = false)
        )
      )
      // under the cap, the same counts as the metrics' exact ones
      val d = depths.head
      assertEquals(
        (d.available, d.scheduled, d.waiting, d.running),
        (q.available, q.scheduled, q.waiting, q.running)
      )
      assertEquals(d.finished, q.finished.view.mapValues(_.n).toMap)
  }

  withDb("throughput: completed and dead tasks per minute of the last hour, of every queue or one") { db =>
    val finished = db.schema("finished")
    // minutes before the database's now: inside the hour, and outside it with a margin, so that a minute
    // passing during the test moves no task across the hour's start
    val ago = Vector(0, 0, 3, 3, 3, 17, 50, 75, 120)
    val states = Vector(
      "completed",
      "dead",
      "completed",
      "completed",
      "cancelled",
      "dead",
      "completed",
      "dead",
      "completed"
    )
    for
      dbNow <- sql"SELECT now()".query[Instant].unique.transact(TestDatabase.admin)
      times = ago.map(m => dbNow.minusSeconds(m * 60L + 1))
      _ <- ago.indices.toVector.traverse_ { i =>
        (Fragment.const(s"""INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts,
            errors, created_at, finished_at) VALUES (""") ++
          fr0"${i.toLong + 1}, ${if i % 2 == 0 then "a" else "b"}, '{}'::jsonb, 0, " ++
          Fragment.const(s"'${states(i)}'") ++ fr0", 1, 1, '[]'::jsonb, ${times(i)}, ${times(i)})")
          .update.run.transact(TestDatabase.admin)
      }
      all <- QueueOverview(db).throughput()
      a <- QueueOverview(db).throughput(Some("a"))
    yield
      def model(queue: Option[String]) =
        ago.indices.filter(i => ago(i) <= 50 && queue.forall(_ == (if i % 2 == 0 then "a" else "b")))
          .groupBy(i => times(i).truncatedTo(ChronoUnit.MINUTES)).toVector.sortBy(_._1).map { (at, is) =>
            FinishedPerMinute(
              at,
              is.count(states(_) == "completed").toLong,
              is.count(states(_) == "dead").toLong
            )
          }
      assertEquals(all, model(None))
      assertEquals(a, model(Some("a")))
  }

  withDb("a cap out of range fails naming it, before any read") { db =>
    for
      zero <- QueueOverview(db).counts(cap = 0).attempt
      huge <- QueueOverview(db).counts(cap = 1000001).attempt
    yield
      assertEquals(
        zero.left.map(_.getMessage),
        Left("invalid QueueOverview.counts: cap must be in 1..1000000, was: 0")
      )
      assert(huge.left.exists(_.isInstanceOf[InvalidSettings]), huge)
  }
