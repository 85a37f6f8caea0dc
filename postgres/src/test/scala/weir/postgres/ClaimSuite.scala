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
      claimed <- sql.claim("c", owner, 30, 60000).transact(db.transactor)
    yield
      val expected = ids.zip(1 to 30).map((id, i) => (((i * 7) % 3), id)).sorted.map(_._2)
      assertEquals(claimed.map(_.id), expected)
      val slack = java.time.Duration.ofSeconds(5)
      claimed.foreach { c =>
        val at: Instant = c.createdAt
        assert(!at.isBefore(before.minus(slack)) && !at.isAfter(after.plus(slack)), s"created at $at")
      }
  }
