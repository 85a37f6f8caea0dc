package weir.postgres

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import doobie.implicits.*
import org.scalacheck.Gen
import org.scalacheck.rng.Seed
import weir.{Limit, Pipeline}
import weir.postgres.internal.Sql
import weir.testkit.Eventually

import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.duration.*

/**
 * The queue controls against a real server: pause and resume, the limit on running tasks (exact under
 * concurrent claimers, sampled from the database while several workers run), the rate's token bucket,
 * changes applied at the next claim, bad input (a handler's snooze: [[SnoozeSuite]]).
 */
class QueueControlsSuite extends DbSuite:

  private def run[A](db: Database[IO], program: doobie.ConnectionIO[A]): IO[A] =
    program.transact(db.transactor)

  /** Moves the rate's bucket of `queue` to `tokens`, as of a time no claim can refill from. */
  private def setTokens(db: Database[IO], queue: String, tokens: Double, refill: Boolean): IO[Unit] =
    Rows.exec(
      s"UPDATE ${db.schema("queues")} SET tokens = $tokens, tokens_at = now() ${
          if refill then "- interval '1 hour'" else "+ interval '1 hour'"
        } WHERE name = '$queue'"
    ).void

  withDb("a paused queue gives no task to any claim, says so, and a resume gives them back") { db =>
    val sql = new Sql(db.schema)
    val admin = TaskAdmin(db)
    for
      _ <- TaskQueue[IO, Int](db, "p").enqueueMany((1 to 3).map(NewTask(_)))
      owner <- run(db, sql.register("w", 1000))
      _ <- admin.queues.pause("p")
      paused <- run(db, sql.claim("p", owner, 10, 60000))
      // the claim functions of the previous releases obey the pause too
      old <- Rows.count(db, "claim_with_headers('p', 1, 10, 60000)")
      _ <- admin.queues.resume("p")
      resumed <- run(db, sql.claim("p", owner, 10, 60000))
      infos <- admin.overview.queues
    yield
      assertEquals(
        (paused.rows, paused.control),
        (Vector.empty, Some(Sql.Control(limited = false, heldBackMillis = Some(-1L))))
      )
      assertEquals(old, 0L)
      assertEquals(resumed.rows.size, 3)
      // a row that sets no control is no control: the claim is the plain one
      assertEquals(resumed.control, None)
      assertEquals(infos.map(i => (i.name, i.paused, i.running)), Vector(("p", false, 3L)))
  }

  withDb(
    "a limit on running tasks counts every claim not yet finished, and a changed limit applies at the next claim"
  ) {
    db =>
      val sql = new Sql(db.schema)
      val admin = TaskAdmin(db)
      for
        _ <- TaskQueue[IO, Int](db, "l").enqueueMany((1 to 10).map(NewTask(_)))
        a <- run(db, sql.register("a", 1000))
        b <- run(db, sql.register("b", 1000))
        _ <- admin.queues.limitRunning("l", Some(3))
        first <- run(db, sql.claim("l", a, 2, 60000))
        second <- run(db, sql.claim("l", b, 2, 60000))
        full <- run(db, sql.claim("l", a, 2, 60000))
        _ <- run(db, sql.complete(first.rows.map(_.token).toArray, keep = false, keyed = false))
        freed <- run(db, sql.claim("l", b, 5, 60000))
        _ <- admin.queues.limitRunning("l", Some(6))
        raised <- run(db, sql.claim("l", a, 5, 60000))
        _ <- admin.queues.limitRunning("l", None)
        unlimited <- run(db, sql.claim("l", a, 5, 60000))
      yield
        assertEquals(first.rows.size, 2)
        assertEquals(first.control, Some(Sql.Control(limited = true, heldBackMillis = None)))
        assertEquals((second.rows.size, second.control.flatMap(_.heldBackMillis)), (1, Some(-1L)))
        assertEquals((full.rows.size, full.control.flatMap(_.heldBackMillis)), (0, Some(-1L)))
        assertEquals((freed.rows.size, freed.control.flatMap(_.heldBackMillis)), (2, Some(-1L)))
        assertEquals((raised.rows.size, raised.control.flatMap(_.heldBackMillis)), (3, Some(-1L)))
        assertEquals((unlimited.rows.size, unlimited.control), (2, None))
  }

  withDb("a rate gives a full burst, then one task per token, and says when the next token is due") { db =>
    val sql = new Sql(db.schema)
    val admin = TaskAdmin(db)
    for
      _ <- TaskQueue[IO, Int](db, "r").enqueueMany((1 to 20).map(NewTask(_)))
      owner <- run(db, sql.register("w", 1000))
      _ <- admin.queues.limitRate("r", Some(QueueRate(perSecond = 5, burst = 3)))
      // the clock is taken out of the bucket: no claim below refills it, except where it is asked to
      _ <- setTokens(db, "r", tokens = 3, refill = false)
      burst <- run(db, sql.claim("r", owner, 10, 60000))
      // a claim refills from its own time: the bucket is taken out of the clock again
      _ <- setTokens(db, "r", tokens = 0, refill = false)
      spent <- run(db, sql.claim("r", owner, 10, 60000))
      _ <- setTokens(db, "r", tokens = 1.5, refill = false)
      one <- run(db, sql.claim("r", owner, 10, 60000))
      _ <- setTokens(db, "r", tokens = 0, refill = true)
      refilled <- run(db, sql.claim("r", owner, 10, 60000))
      _ <- setTokens(db, "r", tokens = 0, refill = true)
      enough <- run(db, sql.claim("r", owner, 2, 60000))
    yield
      assertEquals(burst.rows.size, 3)
      // no token left: the next one is 1/5 s away
      assertEquals((spent.rows.size, spent.control), (0, Some(Sql.Control(limited = false, Some(200L)))))
      // half a token left after one: 100 ms to the next
      assertEquals((one.rows.size, one.control.flatMap(_.heldBackMillis)), (1, Some(100L)))
      // an hour refills the bucket to its burst, no further
      assertEquals(refilled.rows.size, 3)
      // a claim that asked for no more than the tokens allowed was not held back
      assertEquals((enough.rows.size, enough.control.flatMap(_.heldBackMillis)), (2, None))
  }

  withDb(
    "controls on an unknown queue, a limit below 1 and a rate that is not a positive number are refused, naming the value"
  ) {
    db =>
      val admin = TaskAdmin(db)
      for
        unknown <- admin.queues.pause("nowhere").attempt
        _ <- admin.queues.add("declared")
        declared <- admin.queues.limitRunning("declared", Some(2)).attempt
        zero <- admin.queues.limitRunning("declared", Some(0)).attempt
        negative <- admin.queues.limitRunning("declared", Some(-3)).attempt
        both <- admin.queues.limits("declared", Some(4), Some(QueueRate(2.0, 2))).attempt
        bothZero <- admin.queues.limits("declared", Some(0), Some(QueueRate(9.0, 0))).attempt
        bothUnknown <- admin.queues.limits("nowhere", Some(1), None).attempt
        nan <- admin.queues.limitRate("declared", Some(QueueRate(Double.NaN, 1))).attempt
        infinite <- admin.queues.limitRate("declared", Some(QueueRate(Double.PositiveInfinity, 1))).attempt
        noBurst <- admin.queues.limitRate("declared", Some(QueueRate(1.0, 0))).attempt
        infos <- admin.overview.queues
      yield
        unknown match
          case Left(e: UnknownQueue) => assert(e.getMessage.contains("'nowhere'"), e.getMessage)
          case other => fail(s"expected UnknownQueue, got $other")
        assertEquals(declared, Right(()))
        assert(zero.left.exists(_.getMessage.contains("was: 0")), zero)
        assert(negative.left.exists(_.getMessage.contains("was: -3")), negative)
        assertEquals(both, Right(()))
        assertEquals(
          bothZero.left.map(_.getMessage),
          Left(
            "invalid QueueControls.limits: a queue's limit on running tasks must be > 0, was: 0; " +
              "a queue's rate burst must be > 0, was: 0"
          )
        )
        assert(bothUnknown.left.exists(_.isInstanceOf[UnknownQueue]), bothUnknown)
        assert(nan.left.exists(_.getMessage.contains("was: NaN")), nan)
        assert(infinite.left.exists(_.getMessage.contains("was: Infinity")), infinite)
        assert(noBurst.left.exists(_.getMessage.contains("burst must be > 0, was: 0")), noBurst)
        // both limits set together, and neither changed by the refused call
        assertEquals(
          infos.map(i => (i.name, i.maxRunning, i.rate)),
          Vector(("declared", Some(4), Some(QueueRate(2.0, 2))))
        )
  }

  withDb("workers of a paused queue claim nothing however often they try, and run it all once resumed") {
    db =>
      val queue = TaskQueue[IO, Int](db, "pw")
      val admin = TaskAdmin(db)
      val config = TestWorkers.config("pw").copy(stopWhenEmpty = true)
      def worker(ran: Ref[IO, Int]) =
        DurableWorker.start[IO, Int, Unit](db, config)(Pipeline(_).process(_ => ran.update(_ + 1)))
      for
        _ <- queue.enqueueMany((1 to 50).map(NewTask(_)))
        _ <- admin.queues.pause("pw")
        ran <- Ref[IO].of(0)
        done <- (worker(ran), worker(ran)).tupled.use { (a, b) =>
          // each worker's claims are held back again and again (every poll) before the queue resumes
          val heldBack = (a.stats, b.stats).mapN((x, y) => x.heldBack >= 5 && y.heldBack >= 5)
          for
            _ <-
              Eventually.until("5 claims of each worker held back", heldBack, 30.seconds, 20.millis)(identity)
            claimedWhilePaused <- (a.stats, b.stats).mapN(_.claimed + _.claimed)
            ranWhilePaused <- ran.get
            _ <- admin.queues.resume("pw")
            _ <- (a.running.join, b.running.join).parTupled
          yield (claimedWhilePaused, ranWhilePaused)
        }
        total <- ran.get
        finished <- Rows.count(db, "finished")
      yield
        assertEquals(done, (0L, 0))
        assertEquals((total, finished), (50, 50L))
  }

  /** Limit, workers, claim size: drawn from a fixed seed, so that a failure names a draw to run again. */
  val limits: Vector[(Int, Int, Int)] =
    val draw =
      for
        limit <- Gen.choose(1, 4)
        workers <- Gen.choose(2, 3)
        batch <- Gen.choose(1, 6)
      yield (limit, workers, batch)
    Iterator.iterate(Seed(20261127L))(
      _.next
    ).flatMap(seed => draw(Gen.Parameters.default, seed)).take(5).toVector

  limits.foreach { (limit, workers, batch) =>
    withDb(
      s"$workers workers claiming $batch at a time never run more than the queue's limit of $limit, sampled from the database"
    ) {
      db =>
        val queue = TaskQueue[IO, Int](db, "g")
        val n = 60
        val inHandlers = new AtomicInteger
        val maxInHandlers = new AtomicInteger
        val config = TestWorkers.config("g").copy(claimBatch = batch)
        def worker(ran: Ref[IO, Map[Int, Int]]) =
          DurableWorker.start[IO, Int, Unit](db, config) { source =>
            Pipeline(source).process { job =>
              IO(maxInHandlers.accumulateAndGet(inHandlers.incrementAndGet(), math.max)) *>
                IO.sleep((job.payload % 4).millis) *>
                ran.update(m => m.updated(job.payload, m.getOrElse(job.payload, 0) + 1)) *>
                IO(inHandlers.decrementAndGet()).void
            }.withLimit(Limit.fixed(4))
          }
        val runningNow = Rows.count(db, "tasks", "queue = 'g' AND state = 'running'")
        for
          _ <- TaskAdmin(db).queues.add("g")
          _ <- TaskAdmin(db).queues.limitRunning("g", Some(limit))
          _ <- queue.enqueueMany((1 to n).map(NewTask(_)))
          ran <- Ref[IO].of(Map.empty[Int, Int])
          seen <- Ref[IO].of(0L)
          samples <- Ref[IO].of(0)
          sampler = (runningNow.flatMap(r => seen.update(_.max(r))) *> samples.update(_ + 1)).foreverM
          _ <- sampler.background.use(_ =>
            List.fill(workers)(worker(ran)).sequence.use(ws => ws.parTraverse_(_.running.join))
          )
          maxSeen <- seen.get
          sampled <- samples.get
          runs <- ran.get
        yield
          assert(sampled > 0, "the database was never sampled")
          assert(maxSeen <= limit.toLong, s"running in the database: $maxSeen > limit $limit")
          assert(maxInHandlers.get <= limit, s"in handlers at once: ${maxInHandlers.get} > limit $limit")
          assertEquals(runs, (1 to n).map(_ -> 1).toMap)
    }
  }
