package weir.lab.durable

import cats.effect.{Deferred, IO, Ref, Resource}
import cats.syntax.all.*
import doobie.*
import fs2.{Pull, Stream}
import weir.{Limit, Pipeline, Source}
import weir.postgres.*

import scala.concurrent.duration.*

/**
 * Claim ("fetch") time as the `finished` history grows: issue #19 wants it flat from an empty history to
 * 10 million rows. Runs in a schema of its own, so that the other phases' rows are not part of the history.
 *
 * First the `tasks` table is churned: one backlog is enqueued and worked through a worker (its history is
 * then truncated), then `VACUUM (ANALYZE)`, the state autovacuum leaves behind a busy queue. Then, for each history size, `finished`
 * is topped up to that size with one server-side `INSERT … SELECT FROM generate_series` per million rows
 * (ids from the tasks' own sequence, 1% dead with an error, the rest completed), both tables are vacuumed
 * and analysed as autovacuum would after such a change, and a backlog of `backlog` tasks is enqueued and
 * worked by a worker of this JVM with a no-op handler, `claimBatch` 100 and `keepCompleted` (so its
 * completions are added to the history too, as in the service this target describes; the history is younger
 * than the default retention, so the worker's pruner finds nothing to delete).
 *
 * A claim's time is read around the worker's own claim path: from the moment the pipeline asks the
 * durable source for its next chunk until that chunk arrives. Only full batches count, past the first (a
 * short batch is followed by an idle wait, and the first one opens the worker's connections).
 */
object HistoryPhase:

  /** Tasks per claim: small enough that a backlog gives a few hundred claims per size. */
  val claimBatch: Int = 100

  /** Rows per `INSERT` of the fill: one transaction each, so the server never holds a huge one. */
  val fillBatch: Long = 1000000L

  /**
   * One history size: its `finished` rows and their bytes on disk (indexes included) when the backlog
   * started, the time the fill took, each full claim's time, and the backlog's no-op throughput.
   */
  final case class Size(
      finishedRows: Long,
      finishedBytes: Long,
      fillSeconds: Double,
      claimMillis: Vector[Double],
      workedPerSecond: Double
  ):
    def p50: Double = DurableReport.pct(claimMillis, 0.5)
    def p99: Double = DurableReport.pct(claimMillis, 0.99)

  final case class History(backlog: Int, sizes: Vector[Size]):
    /** `f` at the largest history over `f` at the empty one. */
    def ratio(f: Size => Double): Double =
      if sizes.size < 2 then Double.NaN else f(sizes.last) / f(sizes.head)

  /** The sizes measured: 0 and ten equal steps up to `history` (fewer when it has fewer than ten rows). */
  def sizes(history: Long): Vector[Long] = (0 to 10).map(i => history * i / 10).distinct.toVector

  def run(lab: LabDatabase, history: Long, backlog: Int): IO[History] =
    val own = lab.copy(schema = Schema(lab.schema.name + "_history"))
    val schema = Resource.make(Database.migrate[IO](own.config()).void)(_ =>
      own.autocommit(s"DROP SCHEMA IF EXISTS ${own.schema.name} CASCADE").voidError
    )
    val queue = "history"
    (schema *> Database.connect[IO](own.config())).use { db =>
      for
        // the churn also compiles the measured path (claims, completions kept in finished) in this JVM, so
        // the empty history is measured as warm as the later sizes; its finished rows are then removed
        _ <- enqueue(db, queue, backlog) *> drain(db, queue, keep = true)
        _ <- own.autocommit(s"TRUNCATE ${own.schema("finished")}")
        _ <- IO.println(s"  history: churned $backlog tasks through tasks")
        measured <- sizes(history).traverse { target =>
          for
            fill <- fillTo(own, queue, target).timed
            _ <- vacuum(own)
            rows <- count(own, "finished")
            bytes <- own.read("the history's size")(
              Fragment.const(s"SELECT pg_total_relation_size('${own.schema("finished")}')").query[Long].unique
            )
            _ <- enqueue(db, queue, backlog)
            drained <- drain(db, queue, keep = true)
            (claims, seconds) = drained
            size = Size(rows, bytes, fill._1.toMillis / 1e3, claims, backlog / seconds)
            _ <- IO.println(
              f"  history: $rows%,d finished rows, ${bytes / 1e6}%.0f MB (filled in ${size.fillSeconds}%.1f s): claim p50 / p99 " +
                f"${size.p50}%.2f / ${size.p99}%.2f ms over ${claims.size} claims, ${size.workedPerSecond}%.0f tasks/s"
            )
          yield size
        }
      yield History(backlog, measured)
    }

  private def enqueue(
      db: Database[IO],
      queue: String,
      n: Int
  ): IO[Unit] = (1 to n).grouped(10000).toList.traverse_(g =>
    TaskQueue[IO, Int](db, queue).enqueueMany(g.map(NewTask(_)))
  )

  /**
   * Works the queue's backlog with a no-op handler until it is empty: each full claim's time (ms), and the
   * seconds from the first claim to the end.
   */
  private def drain(db: Database[IO], queue: String, keep: Boolean): IO[(Vector[Double], Double)] =
    val config = WorkerConfig(
      queue = queue,
      claimBatch = claimBatch,
      pollInterval = 50.millis,
      keepCompleted = keep,
      stopWhenEmpty = true
    )
    for
      claims <- Ref[IO].of(Vector.empty[(Int, Long)])
      first <- IO.deferred[Long]
      end <- DurableWorker
        .start[IO, Int, Unit](db, config) { source =>
          Pipeline(Source.concurrent(source.producers.map(timed(_, first, claims))*))
            .process(_ => IO.unit)
            .withLimit(Limit.fixed(64))
        }
        .use(w => w.running.join *> IO.monotonic)
      t0 <- first.get
      recorded <- claims.get
    yield (
      recorded.drop(1).collect { case (n, nanos) if n == claimBatch => nanos / 1e6 },
      (end.toNanos - t0) / 1e9
    )

  /**
   * `stream` with the time of each chunk's pull recorded, with its size: the pipeline asks for the next
   * chunk only once it has taken the previous one, so the time until the chunk arrives is the claimer's
   * own, its claim statement's round trip.
   */
  private def timed[A](stream: Stream[IO, A], first: Deferred[IO, Long], into: Ref[IO, Vector[(Int, Long)]])
      : Stream[IO, A] =
    def go(s: Stream[IO, A]): Pull[IO, A, Unit] =
      Pull.eval(IO.monotonic).flatMap { t0 =>
        Pull.eval(first.complete(t0.toNanos).void) >> s.pull.uncons.flatMap {
          case None => Pull.done
          case Some((chunk, rest)) =>
            Pull.eval(IO.monotonic.flatMap(t1 => into.update(_ :+ (chunk.size, (t1 - t0).toNanos)))) >>
              Pull.output(chunk) >> go(rest)
        }
      }
    go(stream).stream

  /** Inserts completed (1% dead) rows into `finished` until it holds `target`; the rows it inserted. */
  private def fillTo(lab: LabDatabase, queue: String, target: Long): IO[Long] =
    val s = lab.schema
    count(lab, "finished").flatMap { have =>
      val missing = (target - have).max(0L)
      Iterator
        .iterate(missing)(_ - fillBatch)
        .takeWhile(_ > 0)
        .map(_.min(fillBatch))
        .toList
        .traverse_ { rows =>
          lab.autocommit(
            s"""INSERT INTO ${s("finished")} (id, queue, payload, priority, state, attempt, max_attempts,
                                               errors, created_at, finished_at)
                SELECT nextval('${s("tasks")}_id_seq'), '$queue', to_jsonb(g), 0,
                       CASE WHEN g % 100 = 0 THEN 'dead' ELSE 'completed' END::${s("finished_state")},
                       CASE WHEN g % 100 = 0 THEN 20 ELSE 1 END, 20,
                       CASE WHEN g % 100 = 0
                            THEN jsonb_build_array(jsonb_build_object('attempt', 20, 'at', now(), 'error', 'boom'))
                            ELSE '[]'::jsonb END,
                       now() - interval '1 second', now()
                FROM generate_series(1, $rows) AS g"""
          )
        }
        .as(missing)
    }

  private def vacuum(lab: LabDatabase): IO[Unit] =
    lab.autocommit(s"VACUUM (ANALYZE) ${lab.schema("tasks")}, ${lab.schema("finished")}")

  private def count(lab: LabDatabase, table: String): IO[Long] =
    lab.read(s"the rows of $table")(
      Fragment.const(s"SELECT count(*) FROM ${lab.schema(table)}").query[Long].unique
    )
