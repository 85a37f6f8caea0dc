package weir.postgres

import cats.effect.std.CyclicBarrier
import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import org.scalacheck.Gen
import weir.postgres.internal.Sql

/**
 * Fan-ins whose parents end in several statements at once, each a transaction of its own on its own
 * session, started together: each statement settles its parents' dependents in one call, counting a
 * dependent down by the number of its parents the statement ended. Whatever the draw (how many parents,
 * how many statements, which parents die): no transaction deadlocks or fails, a fan-in that needs every
 * parent completed is cancelled once, naming a dead parent, if one died and released once otherwise, a
 * fan-in that takes any outcome is released once with no parent left, a grandchild follows its parent, and
 * no edge is left.
 */
class FanInSettleSuite extends DbSuite:

  /** `parents` parents ended by `statements` concurrent transactions, parent `i` by statement `group(i)`. */
  final case class Scenario(parents: Int, statements: Int, group: Vector[Int], dies: Set[Int])

  val scenarios: Gen[Scenario] =
    for
      parents <- Gen.choose(2, 120)
      statements <- Gen.choose(2, 4)
      group <- Gen.listOfN(parents, Gen.choose(0, statements - 1)).map(_.toVector)
      dies <- Gen.frequency(1 -> Gen.const(Set.empty[Int]), 1 -> Gen.someOf(0 until parents).map(_.toSet))
    yield Scenario(parents, statements, group, dies.take(3))

  /** Draws from a fixed seed, so that a failure names a scenario that can be run again. */
  val drawn: Vector[Scenario] = FixedDraws(scenarios, 20261129L, 6)

  drawn.zipWithIndex.foreach { (sc, k) =>
    withDb(
      s"draw $k: ${sc.parents} parents ended by ${sc.statements} concurrent statements, ${sc.dies.size} of them dead"
    ) { db =>
      val p = TaskQueue[IO, String](db, "p")
      val c = TaskQueue[IO, String](db, "c")
      val sql = new Sql(db.schema)
      for
        parents <- (0 until sc.parents).toVector.traverse(i => p.enqueue(NewTask(s"p$i")).map(_.taskId))
        needsAll <- c.enqueue(NewTask("needs-all", after = parents.map(After.completed))).map(_.taskId)
        anyOutcome <- c.enqueue(NewTask("any-outcome", after = parents.map(After.finished))).map(_.taskId)
        grandchild <-
          c.enqueue(NewTask("grandchild", after = Vector(After.completed(needsAll)))).map(_.taskId)
        claimed <- sql.claim("p", 1L, sc.parents, 600000L).transact(TestDatabase.admin)
        token = claimed.rows.map(r => r.id -> r.token).toMap
        _ = assertEquals(token.keySet, parents.toSet)
        barrier <- CyclicBarrier[IO](sc.statements)
        _ <- (0 until sc.statements).toVector.parTraverse_ { g =>
          val mine = parents.indices.filter(i => sc.group(i) == g)
          val (dying, completing) = mine.partition(sc.dies.contains)
          val end =
            sql.complete(completing.map(i => token(parents(i))).toArray, keep = false, keyed = false) *>
              sql.fail(
                dying.map(i => token(parents(i))).toArray,
                dying.map(_ => "boom").toArray,
                dying.map(_ =>
                  -1L
                ).toArray
              )
          TestDatabase.session.use((xa, conn) =>
            barrier.await *> end.transact(xa) *> IO.blocking(conn.commit())
          )
        }
        live <- Rows.query[(Long, String, Int)](
          s"SELECT id, state::text, parents_left FROM ${db.schema("tasks")} WHERE queue = 'c' ORDER BY id"
        )
        ended <- Rows.query[(Long, String, String)](
          s"SELECT id, state::text, errors::text FROM ${db.schema("finished")} WHERE queue = 'c' ORDER BY id"
        )
        edges <- Rows.count(db, "dependencies")
        firstClaim <- sql.claim("c", 2L, 10, 60000L).transact(TestDatabase.admin)
        secondClaim <- sql.claim("c", 2L, 10, 60000L).transact(TestDatabase.admin)
      yield
        val deadIds = sc.dies.map(parents(_))
        if deadIds.isEmpty then
          assertEquals(
            live,
            Vector((needsAll, "available", 0), (anyOutcome, "available", 0), (grandchild, "waiting", 1))
          )
          assertEquals(ended, Vector.empty)
          assertEquals(firstClaim.rows.map(_.id).toSet, Set(needsAll, anyOutcome))
        else
          assertEquals(live, Vector((anyOutcome, "available", 0)))
          assertEquals(
            ended.map((id, state, _) => (id, state)),
            Vector(needsAll -> "cancelled", grandchild -> "cancelled")
          )
          val named = """task (\d+), which it waits for, ended dead""".r.findAllMatchIn(
            ended.head._3
          ).map(_.group(1).toLong)
          assertEquals(named.toVector.size, 1, ended.head._3)
          assert(named.forall(deadIds.contains), s"$named is no dead parent of $deadIds")
          assert(ended(1)._3.contains(s"task $needsAll, which it waits for, was cancelled"), ended(1)._3)
          assertEquals(firstClaim.rows.map(_.id), Vector(anyOutcome))
        // every edge consumed: the grandchild, with one parent, waits on it without one (migration 19)
        assertEquals(edges, 0L)
        assertEquals(secondClaim.rows, Vector.empty)
    }
  }
