package weir.postgres

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import org.scalacheck.Gen
import weir.{Limit, Pipeline}
import weir.testkit.Eventually

import java.time.Instant
import scala.concurrent.duration.*

/**
 * Random batches against a real server: up to three batches of 0 to 200 members each, across two queues,
 * added in chunks while workers already run them, some members failing to dead, some cancelled by an
 * operator (waiting or running), each batch closed before its last member ends, after it, by its last member
 * in the transaction of its own completion, by a cancel of the batch, or never. Whatever the draw: every
 * closed batch ends, and its callback runs exactly once, after every member's end (by the database's
 * clock), reading counts equal to its members' finished rows by state; a batch never closed never ends and
 * its callback never runs; every member is counted once.
 */
class BatchPropertySuite extends DbSuite:

  override def munitIOTimeout: Duration = 3.minutes

  enum Close:
    case Before, After, ByLastMember, ByCancel, Never

  /** One batch: its members' count, how it is closed, how many chunks its members are added in. */
  final case class Plan(size: Int, close: Close, chunks: Int)

  final case class Scenario(
      batches: Vector[Plan],
      failEvery: Option[Int],
      cancelEvery: Option[Int],
      workers: Int,
      limit: Int,
      claimBatch: Int
  ):
    def queue(member: Int): String = if member % 2 == 0 then "pa" else "pb"
    def fails(member: Int): Boolean = failEvery.exists(k => member % k == k - 1)
    def cancelled(member: Int): Boolean = cancelEvery.exists(k => member % k == 1)

  private val plans: Gen[Plan] =
    for
      size <- Gen.frequency(1 -> Gen.const(0), 6 -> Gen.choose(1, 200))
      chunks <- Gen.choose(1, 5)
    yield Plan(size, Close.Never, chunks) // the ways to close are dealt over the draws: see `drawn`

  val scenarios: Gen[Scenario] =
    for
      n <- Gen.choose(2, 3)
      batches <- Gen.listOfN(n, plans).map(_.toVector)
      failEvery <- Gen.option(Gen.choose(3, 9))
      cancelEvery <- Gen.option(Gen.choose(5, 13))
      workers <- Gen.choose(1, 2)
      limit <- Gen.choose(1, 8)
      claimBatch <- Gen.choose(1, 20)
    yield Scenario(batches, failEvery, cancelEvery, workers, limit, claimBatch)

  /**
   * Draws from a fixed seed, so that a failure names a scenario that can be run again; the ways to close are
   * dealt in turn over the draws' batches, so that each appears whatever the seed.
   */
  val drawn: Vector[Scenario] =
    val draws = FixedDraws(scenarios, 20261206L, 8)
    val closes = Iterator.continually(Close.values).flatten
    draws.map(sc =>
      sc.copy(batches = sc.batches.map { p =>
        val close = closes.next()
        p.copy(close = if p.size == 0 && close == Close.ByLastMember then Close.After else close)
      })
    )

  /** A member's payload: its batch and its number in it. */
  private def payload(batch: Int, member: Int): Int = batch * 1000 + member

  drawn.zipWithIndex.foreach { (sc, k) =>
    val shape = sc.batches.map(p => s"${p.size} closed ${p.close} in ${p.chunks}").mkString("; ") +
      s", dead every ${sc.failEvery}, cancelled every ${sc.cancelEvery}, ${sc.workers} worker(s) of limit ${sc.limit}"
    withDb(s"scenario $k: one callback per closed batch, after its members, with their counts ($shape)") {
      db =>
        val batches = Batches(db)
        val queues = Map("pa" -> TaskQueue[IO, Int](db, "pa"), "pb" -> TaskQueue[IO, Int](db, "pb"))
        val closers = TaskQueue[IO, Int](db, "pc")
        val callbacks = TaskQueue[IO, Int](db, "cb")
        val config =
          (q: String) => TestWorkers.config(q).copy(claimBatch = sc.claimBatch, stopWhenEmpty = false)
        def progress(id: BatchId) = batches.progress(id).map(_.getOrElse(fail(s"$id not found")))
        for
          _ <- Rows.exec(
            s"CREATE TABLE ${db.schema("starts")} (task_id bigint, at timestamptz DEFAULT clock_timestamp())"
          )
          ids <- sc.batches.indices.toVector.traverse(b => batches.open(callbacks, NewTask(b)))
          calls <- Ref[IO].of(Vector.empty[(Int, Option[BatchProgress])])
          members <- Ref[IO].of(Map.empty[Long, (Int, Int)]) // member's task id -> (batch, number)
          member = (job: Job[Int]) =>
            val (b, i) = (job.payload / 1000, job.payload % 1000)
            IO.sleep((i % 3).millis) *>
              IO.raiseError(new RuntimeException(s"member $i of batch $b fails")).whenA(sc.fails(i))
          // the last member of a batch closed ByLastMember waits for the others to end, then closes its batch in
          // the transaction of its own completion
          closer = (job: Job[Int]) =>
            Eventually.until("the others ended", progress(ids(job.payload)), 60.seconds)(_.pending == 1L) *>
              (batches.closeIn(ids(job.payload)) *> job.completeIn).transact(db.transactor).void
          callback = (job: Job[Int]) =>
            Rows.exec(s"INSERT INTO ${db.schema("starts")} (task_id) VALUES (${job.id})") *>
              job.batch.transact(db.transactor).flatMap(read => calls.update(_ :+ (job.payload -> read)))
          worker = (q: String, limit: Int, handler: Job[Int] => IO[Unit]) =>
            DurableWorker.start[IO, Int, Unit](db, config(q))(source =>
              Pipeline(source).process(handler).withLimit(Limit.fixed(limit))
            )
          workers =
            (Vector("pa", "pb").flatMap(q => Vector.fill(sc.workers)(worker(q, sc.limit, member))) ++
              Vector(worker("pc", 4, closer), worker("cb", 4, callback))).sequence
          drive = (b: Int) =>
            val plan = sc.batches(b)
            val chunks = (0 until plan.size).grouped((plan.size / plan.chunks).max(1)).toVector
            for
              _ <- chunks.traverse_ { chunk =>
                val numbers = chunk.filterNot(i => plan.close == Close.ByLastMember && i == plan.size - 1)
                numbers.groupBy(sc.queue).toVector.traverse_ { (q, is) =>
                  batches.add(ids(b), queues(q), is.map(i => NewTask(payload(b, i), maxAttempts = 1)))
                    .flatTap(es => members.update(_ ++ es.map(_.taskId).zip(is.map(b -> _))))
                    // an operator cancels some of what was just added: waiting, or running already
                    .flatMap(es =>
                      TaskAdmin(db).tasks.cancelMany(
                        es.zip(is).collect { case (e, i) if sc.cancelled(i) => e.taskId },
                        "operator"
                      )
                    )
                }
              }
              _ <- plan.close match
                case Close.Before => batches.close(ids(b)).void
                case Close.After =>
                  Eventually.until("every member ended", progress(ids(b)), 60.seconds)(_.pending == 0L) *>
                    batches.close(ids(b)).void
                case Close.ByLastMember =>
                  batches.add(ids(b), closers, Vector(NewTask(b)))
                    .flatMap(es => members.update(_ + (es.head.taskId -> (b, plan.size - 1))))
                case Close.ByCancel => batches.cancel(ids(b)).void
                case Close.Never => IO.unit
            yield ()
          closedOnes = sc.batches.indices.filter(b => sc.batches(b).close != Close.Never).toVector
          _ <- workers.use { _ =>
            sc.batches.indices.toVector.parTraverse_(drive) *>
              Eventually.until(
                "every member ended, and every closed batch's callback ran",
                (Rows.count(db, "tasks", "batch IS NOT NULL"), calls.get.map(_.size)).tupled,
                90.seconds
              )((left, ran) => left == 0L && ran >= closedOnes.size)
          }
          read <- calls.get
          finished <- Rows.query[(
              Long,
              String,
              Instant
          )](s"SELECT id, state::text, finished_at FROM ${db.schema("finished")}")
          starts <- Rows.query[(Long, Instant)](s"SELECT task_id, at FROM ${db.schema("starts")}")
          byMember <- members.get
          ended <- ids.traverse(progress)
          waitingCallbacks <- Rows.query[(Long, String)](s"SELECT id, state::text FROM ${db.schema("tasks")}")
        yield
          val end = finished.map(f => f._1 -> (f._2, f._3)).toMap
          sc.batches.indices.foreach { b =>
            val plan = sc.batches(b)
            val p = ended(b)
            val mine = byMember.collect { case (id, (`b`, _)) => id }.toVector
            val states = mine.map(id => end.get(id).fold("none")(_._1))
            assertEquals(mine.size.toLong, p.members, s"batch $b: its members")
            assertEquals(
              (p.completed, p.dead, p.cancelled),
              (
                states.count(_ == "completed").toLong,
                states.count(_ == "dead").toLong,
                states.count(_ == "cancelled").toLong
              ),
              s"batch $b: its counts against its members' rows"
            )
            // a member that no one cancelled ended as its handler says (the closing member completes)
            byMember.foreach { (id, at) =>
              val (bb, i) = at
              if bb == b && plan.close != Close.ByCancel && !sc.cancelled(i) then
                val closing = plan.close == Close.ByLastMember && i == plan.size - 1
                val expected = if sc.fails(i) && !closing then "dead" else "completed"
                assertEquals(end(id)._1, expected, s"batch $b, member $i")
            }
            val runs = read.filter(_._1 == b)
            if plan.close == Close.Never then
              assertEquals((p.closed, p.ended), (false, false), s"batch $b")
              assertEquals(runs, Vector.empty, s"batch $b: the callback of a batch never closed ran")
              assertEquals(waitingCallbacks.filter(_._1 == p.callback), Vector(p.callback -> "waiting"))
            else
              assert(p.ended, s"batch $b did not end: $p")
              assertEquals(
                runs,
                Vector(b -> Some(p)),
                s"batch $b: one callback, reading the batch it ended with"
              )
              val ranAt = starts.filter(_._1 == p.callback).map(_._2)
              assertEquals(ranAt.size, 1, s"batch $b: its callback's runs")
              mine.foreach(id =>
                assert(
                  !ranAt.head.isBefore(end(id)._2),
                  s"batch $b: the callback ran before member $id ended"
                )
              )
          }
    }
  }
