package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.implicits.*
import org.scalacheck.Gen
import weir.postgres.internal.Sql
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * A wide fan-out released in slices (migration 17): the end of a completed parent consumes at most 1,000 of
 * its edges, in id order of the dependents, and the claims that follow, in any sessions and any number at
 * once, consume the rest, a slice per claim. Whatever the draw (the fan-out's size on either side of a
 * slice's bound, how many claimers, how many tasks each claims at a time): nothing is claimable before the
 * parent's end commits, the end releases exactly the first slice, every dependent is then claimed exactly
 * once, and no edge and no `settling` row is left.
 */
class SlicedReleaseSuite extends DbSuite:

  private val Slice = 1000

  /** `children` dependents of one parent, claimed by `claimers` concurrent claimers, `perClaim` at a time. */
  final case class Scenario(children: Int, claimers: Int, perClaim: Int)

  val scenarios: Gen[Scenario] =
    for
      children <- Gen.oneOf(Gen.choose(Slice - 1, Slice + 1), Gen.choose(Slice + 2, 3 * Slice + 100))
      claimers <- Gen.choose(1, 4)
      perClaim <- Gen.choose(1, 400)
    yield Scenario(children, claimers, perClaim)

  /** Draws from a fixed seed, so that a failure names a scenario that can be run again. */
  val drawn: Vector[Scenario] = FixedDraws(scenarios, 20261130L, 6)

  /** The root in queue `p` and its `n` dependents in queue `c`: (root, dependents in id order). */
  private def fanOut(db: Database[IO], n: Int): IO[(Long, Vector[Long])] =
    val p = TaskQueue[IO, String](db, "p")
    val c = TaskQueue[IO, String](db, "c")
    for
      root <- p.enqueue(NewTask("root")).map(_.taskId)
      children <- c.enqueueMany((0 until n).map(i => NewTask(s"c$i", after = Vector(After.completed(root)))))
    yield (root, children.map(_.taskId).sorted)

  /** Claims and completes the root, in one transaction each, as a worker's claim and result do. */
  private def endRoot(sql: Sql, root: Long): IO[Unit] =
    sql.claim("p", 1L, 1, 600000L).transact(TestDatabase.admin).flatMap { claimed =>
      assertEquals(claimed.rows.map(_.id), Vector(root))
      sql.complete(
        Array(claimed.rows.head.token),
        keep = false,
        keyed = false
      ).transact(TestDatabase.admin).void
    }

  private def released(db: Database[IO]): IO[Vector[Long]] =
    Rows.query[Long](
      s"SELECT id FROM ${db.schema("tasks")} WHERE queue = 'c' AND state <> 'waiting' ORDER BY id"
    )

  drawn.zipWithIndex.foreach { (sc, k) =>
    withDb(
      s"draw $k: a fan-out of ${sc.children}, claimed by ${sc.claimers} claimer(s) ${sc.perClaim} at a time"
    ) { db =>
      val sql = new Sql(db.schema)
      // a claimer claims until a claim finds nothing while no parent is left to settle
      def claimer(owner: Long): IO[Vector[Long]] =
        def loop(got: Vector[Long]): IO[Vector[Long]] =
          sql.claim("c", owner, sc.perClaim, 600000L).transact(TestDatabase.admin).flatMap { claim =>
            if claim.rows.nonEmpty then loop(got ++ claim.rows.map(_.id))
            else Rows.count(db, "settling").flatMap(left => if left == 0 then IO.pure(got) else loop(got))
          }
        loop(Vector.empty)
      for
        fan <- fanOut(db, sc.children)
        (root, children) = fan
        early <- sql.claim("c", 2L, sc.children, 600000L).transact(TestDatabase.admin)
        _ <- endRoot(sql, root)
        firstSlice <- released(db)
        settlingAfterEnd <- Rows.count(db, "settling")
        claims <- (1 to sc.claimers).toVector.parTraverse(i => claimer(10L + i))
        edges <- Rows.count(db, "dependencies")
        settling <- Rows.count(db, "settling")
        states <- Rows.query[(String, Int, Long)](
          s"SELECT state::text, parents_left, count(*) FROM ${db.schema("tasks")} WHERE queue = 'c' GROUP BY 1, 2"
        )
      yield
        assertEquals(early.rows, Vector.empty, "a dependent was claimable before its parent ended")
        assertEquals(firstSlice, children.take(Slice))
        assertEquals(settlingAfterEnd, if sc.children > Slice then 1L else 0L)
        val all = claims.flatten
        assertEquals(all.sorted, children, "every dependent claimed exactly once")
        assertEquals(edges, 0L)
        assertEquals(settling, 0L)
        assertEquals(states, Vector(("running", 0, sc.children.toLong)))
    }
  }

  withDb(
    "the rest of a release is carried on by a paused queue's claim, another queue's and the rescuer's round"
  ) {
    db =>
      val sql = new Sql(db.schema)
      for
        fan <- fanOut(db, 3 * Slice + 1)
        (root, children) = fan
        _ <- Rows.exec(s"INSERT INTO ${db.schema("queues")} (name, paused) VALUES ('c', true)")
        _ <- endRoot(sql, root)
        afterEnd <- released(db)
        paused <- sql.claim("c", 2L, 10, 600000L).transact(TestDatabase.admin)
        afterPaused <- released(db)
        other <- sql.claim("other", 3L, 10, 600000L).transact(TestDatabase.admin)
        afterOther <- released(db)
        _ <- sql.settleNext.transact(TestDatabase.admin)
        afterRescuer <- released(db)
        settling <- Rows.count(db, "settling")
        edges <- Rows.count(db, "dependencies")
        _ <- sql.settleNext.transact(TestDatabase.admin) // nothing left: nothing done
      yield
        assertEquals(afterEnd, children.take(Slice))
        assertEquals(paused.rows, Vector.empty)
        assertEquals(afterPaused, children.take(2 * Slice))
        assertEquals(other.rows, Vector.empty)
        assertEquals(afterOther, children.take(3 * Slice))
        assertEquals(afterRescuer, children)
        assertEquals((settling, edges), (0L, 0L))
  }

  withDb(
    "an enqueue naming a parent whose last slice another transaction is releasing leaves its tasks to settle"
  ) {
    db =>
      val sql = new Sql(db.schema)
      val c = TaskQueue[IO, String](db, "c")
      for
        fan <- fanOut(db, 2 * Slice)
        (root, children) = fan
        _ <- endRoot(sql, root)
        // the last slice's release, not committed: it consumed every edge it could see and forgot the parent
        settler <- TestDatabase.session.allocated
        ((xa, conn), close) = settler
        _ <- sql.settleNext.transact(xa)
        // an enqueue naming the ended parent inserts its edges and settles them, waiting for the slice's rows
        late <-
          c.enqueueMany((0 until 10).map(i => NewTask(s"late$i", after = Vector(After.completed(root)))))
            .start
        _ <- Eventually.until(
          "the enqueue waiting for the slice's locks",
          Rows.query[Long](
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
          ).map(_.head),
          30.seconds
        )(_ >= 1L)
        _ <- IO.blocking(conn.commit()) *> close
        lateIds <- late.joinWithNever.map(_.map(_.taskId))
        settling <- Rows.count(db, "settling")
        _ <- sql.settleNext.transact(TestDatabase.admin)
        all <- released(db)
        edges <- Rows.count(db, "dependencies")
      yield
        assertEquals(settling, 1L, "the enqueue's edges were left without a parent to settle")
        assertEquals(all, (children ++ lateIds).sorted)
        assertEquals(edges, 0L)
  }

  withDb(
    "a statement that ends many parents of one dependent each releases them all: the slice is per parent"
  ) {
    db =>
      val sql = new Sql(db.schema)
      val p = TaskQueue[IO, String](db, "p")
      val c = TaskQueue[IO, String](db, "c")
      val n = Slice + 500
      for
        parents <- p.enqueueMany((0 until n).map(i => NewTask(s"p$i"))).map(_.map(_.taskId))
        children <- c.enqueueMany(parents.map(id => NewTask(s"c$id", after = Vector(After.completed(id)))))
          .map(_.map(_.taskId).sorted)
        claimed <- sql.claim("p", 1L, n, 600000L).transact(TestDatabase.admin)
        _ <- sql.complete(claimed.rows.map(_.token).toArray, keep = false, keyed = false)
          .transact(TestDatabase.admin)
        all <- released(db)
        settling <- Rows.count(db, "settling")
      yield
        assertEquals(claimed.rows.size, n)
        assertEquals(all, children)
        assertEquals(settling, 0L)
  }
