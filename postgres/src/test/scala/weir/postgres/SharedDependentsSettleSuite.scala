package weir.postgres

import cats.effect.std.CyclicBarrier
import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import org.scalacheck.Gen
import weir.postgres.internal.Sql

/**
 * Wide sets of dependents shared by parents that end in concurrent statements, one parent each, so that each
 * statement meets each of its dependents once and counts them down without a separate lock pass (migration
 * 16): the statements lock the same rows through the primary key in id order, so none deadlocks. Whatever
 * the draw (how many parents, which of them each dependent waits for, which die): every transaction commits,
 * a dependent whose parents all completed is released once (no parent left, claimed once), one with a dead
 * parent is cancelled once naming a dead parent of its own, and no edge is left.
 */
class SharedDependentsSettleSuite extends DbSuite:

  /** `parents` parents, each ended by a statement of its own; dependent `i` waits for `waits(i)`. */
  final case class Scenario(parents: Int, waits: Vector[Set[Int]], dies: Set[Int])

  val scenarios: Gen[Scenario] =
    for
      parents <- Gen.choose(2, 4)
      children <- Gen.choose(1, 400)
      waits <- Gen.listOfN(children, Gen.nonEmptyContainerOf[Set, Int](Gen.choose(0, parents - 1)))
      dies <- Gen.frequency(3 -> Gen.const(Set.empty[Int]), 1 -> Gen.choose(0, parents - 1).map(Set(_)))
    yield Scenario(parents, waits.toVector, dies)

  /** Draws from a fixed seed, so that a failure names a scenario that can be run again. */
  val drawn: Vector[Scenario] = FixedDraws(scenarios, 20261129L, 8)

  drawn.zipWithIndex.foreach { (sc, k) =>
    withDb(
      s"draw $k: ${sc.waits.size} dependents of ${sc.parents} parents ended by as many concurrent statements, ${sc.dies.size} dead"
    ) { db =>
      val p = TaskQueue[IO, String](db, "p")
      val c = TaskQueue[IO, String](db, "c")
      val sql = new Sql(db.schema)
      for
        parents <- (0 until sc.parents).toVector.traverse(i => p.enqueue(NewTask(s"p$i")).map(_.taskId))
        children <- c.enqueueMany(sc.waits.zipWithIndex.map((w, i) =>
          NewTask(s"c$i", after = w.toVector.sorted.map(j => After.completed(parents(j))))
        )).map(_.map(_.taskId))
        claimed <- sql.claim("p", 1L, sc.parents, 600000L).transact(TestDatabase.admin)
        token = claimed.rows.map(r => r.id -> r.token).toMap
        _ = assertEquals(token.keySet, parents.toSet)
        barrier <- CyclicBarrier[IO](sc.parents)
        _ <- parents.indices.toVector.parTraverse_ { i =>
          val t = Array(token(parents(i)))
          val end =
            if sc.dies.contains(i) then sql.fail(t, Array("boom"), Array(-1L)).void
            else sql.complete(t, keep = false, keyed = false).void
          TestDatabase.session.use((xa, conn) =>
            barrier.await *> end.transact(xa) *> IO.blocking(conn.commit())
          )
        }
        live <- Rows.query[(Long, String, Int)](
          s"SELECT t.id, ${Rows.liveState(db)} FROM ${db.schema("tasks")} AS t WHERE t.queue = 'c' ORDER BY t.id"
        )
        ended <- Rows.query[(Long, String, String)](
          s"SELECT id, state::text, errors::text FROM ${db.schema("finished")} WHERE queue = 'c' ORDER BY id"
        )
        edges <- Rows.count(db, "dependencies")
        firstClaim <- sql.claim("c", 2L, sc.waits.size + 1, 60000L).transact(TestDatabase.admin)
        secondClaim <- sql.claim("c", 2L, 10, 60000L).transact(TestDatabase.admin)
      yield
        val dead = sc.dies.map(parents(_))
        val doomed = children.indices.filter(i => sc.waits(i).exists(sc.dies.contains)).map(children(_))
        val released = children.filterNot(doomed.contains)
        assertEquals(live, released.map(id => (id, "available", 0)))
        assertEquals(ended.map((id, state, _) => (id, state)), doomed.toVector.map(_ -> "cancelled"))
        ended.foreach { (id, _, errors) =>
          val mine = sc.waits(children.indexOf(id)).map(parents(_))
          val named = """task (\d+), which it waits for, ended dead""".r.findAllMatchIn(errors)
            .map(_.group(1).toLong).toVector
          assertEquals(named.size, 1, errors)
          assert(named.forall(n => dead.contains(n) && mine.contains(n)), s"$named: no dead parent of $id")
        }
        assertEquals(firstClaim.rows.map(_.id).sorted, released)
        assertEquals(edges, 0L)
        assertEquals(secondClaim.rows, Vector.empty)
    }
  }
