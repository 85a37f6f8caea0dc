package weir.lab.durable

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*
import weir.Pipeline
import weir.postgres.*

import scala.concurrent.duration.*

/** The measurements of `./weir lab durable`, each on its own queue of the run's schema. */
object Phases:

  private def seconds(from: Long, to: Long): Double = (to - from) / 1e9

  /** Batch enqueue rates, tasks per second: from one enqueuer, and from `enqueuers` at once (if more than one). */
  final case class Enqueue(one: Double, concurrent: Option[(Int, Double)])

  /**
   * Enqueues `n` tasks (every 4th with one of `keys` ordering keys) in batches of 10,000, first from one
   * enqueuer, then from `enqueuers` at once, each its share of `n` on its own connection. A first round of
   * `n / 10` tasks (at most 20,000), not measured, compiles this JVM's enqueue path, as in a service that
   * has been enqueuing for a while.
   */
  def enqueue(db: Database[IO], queue: String, n: Int, keys: Int, enqueuers: Int): IO[Enqueue] =
    val q = TaskQueue[IO, Int](db, queue)
    def batches(from: Int, to: Int): IO[Unit] = (from until to).grouped(10000).toList.traverse_(g =>
      q.enqueueMany(g.map(i => NewTask(i, orderingKey = key(i, keys))))
    ).void
    def rate(count: Int)(io: IO[Unit]): IO[Double] = io.timed.map((t, _) => count / t.toUnit(SECONDS))
    for
      _ <- TaskQueue[IO, Int](db, s"$queue-warmup").enqueueMany((1 to (n / 10).min(20000)).map(NewTask(_)))
      one <- rate(n)(batches(0, n))
      concurrent <-
        if enqueuers <= 1 then IO.none
        else
          val share = n / enqueuers
          rate(share * enqueuers)(
            (0 until enqueuers).toList.parTraverse_(e => batches(n + e * share, n + (e + 1) * share))
          ).map(r => Some((enqueuers, r)))
    yield Enqueue(one, concurrent)

  /** Task `i`'s ordering key: every 4th task gets one, the `keys` keys in turn (so each is used alike). */
  def key(i: Int, keys: Int): Option[String] = Option.when(keys > 0 && i % 4 == 0)(s"k${(i / 4) % keys}")

  /** One throughput round: weir's no-op tasks per second, then River's jobs per second (or why not). */
  final case class Round(worked: Double, river: Either[String, Double])

  /**
   * `rounds` rounds of no-op tasks worked per second by `workers` idle worker processes once `n` tasks
   * appear at once (one enqueue transaction): from its commit until the queue is empty. After each round,
   * `between` runs (River's benchmark on the same server, so that both see the machine in the same state;
   * weir's workers wait idle meanwhile). A first round of `n / 5` tasks, not measured, lets the workers'
   * JIT compile the claim path (River's benchmark is a compiled Go binary).
   */
  def throughput(
      lab: LabDatabase,
      db: Database[IO],
      queue: String,
      n: Int,
      workers: Int,
      limit: Int,
      rounds: Int,
      between: IO[Either[String, Double]]
  ): IO[Vector[Round]] =
    val args = List(lab.url, lab.schema.name, queue, limit.toString, "noop", "1000", "3000")
    (List.fill(workers)(Children.start(args)).parSequence, lab.emptiness(queue)).tupled.use {
      (children, empty) =>
        def round(tasks: Int): IO[Double] =
          for
            _ <- TaskQueue[IO, Int](db, queue).enqueueMany((1 to tasks).map(NewTask(_)))
            t0 <- IO.monotonic
            _ <- (IO.sleep(50.millis) *> empty).iterateUntil(identity)
            t1 <- IO.monotonic
          yield tasks / seconds(t0.toNanos, t1.toNanos)
        round((n / 5).max(1)) *>
          (1 to rounds).toVector.traverse(r =>
            round(n).flatMap(w => between.map(Round(w, _))).flatTap(x =>
              IO.println(
                f"  round $r: weir ${x.worked}%.0f tasks/s, River ${x.river.fold(identity, d => f"$d%.0f jobs/s")}"
              )
            )
          ) <*
          children.traverse_(c => IO.blocking(c.process.destroy())) <* // SIGTERM: each drains and deregisters
          children.traverse_(c => IO.interruptible(c.process.waitFor()).void)
    }

  /** One idle-latency sample: from the enqueue call, and from its commit (the call's return), to the start. */
  final case class Latency(fromCall: Double, fromCommit: Double)

  /**
   * Enqueue-to-start latencies (ms) of `n` tasks enqueued one at a time, 20 ms apart, to an idle worker in
   * this JVM, after `warmup` unmeasured ones 1 ms apart (so that the claim path runs compiled code, as it
   * does in a long-running worker).
   */
  def idleLatency(db: Database[IO], queue: String, n: Int, warmup: Int, listen: Boolean, poll: FiniteDuration)
      : IO[Vector[Latency]] =
    val config = WorkerConfig(queue = queue, listen = listen, pollInterval = poll)
    for
      started <- Ref[IO].of(Map.empty[Int, Long])
      worker = DurableWorker.start[IO, Int, Unit](db, config) { source =>
        Pipeline(source).process(job =>
          IO.monotonic.flatMap(t => started.update(_.updated(job.payload, t.toNanos)))
        )
      }
      latencies <- worker.use { w =>
        (1 to warmup + n).toVector.traverse { i =>
          for
            t0 <- IO.monotonic
            _ <- TaskQueue[IO, Int](db, queue).enqueue(NewTask(i))
            committed <- IO.monotonic
            t1 <- (IO.sleep(200.micros) *> started.get.map(_.get(i))).iterateUntil(_.isDefined).map(_.get)
            _ <- IO.sleep(if i > warmup then 20.millis else 1.milli)
          yield Latency((t1 - t0.toNanos) / 1e6, (t1 - committed.toNanos) / 1e6)
        }.map(_.drop(warmup)) <* w.drain(5.seconds)
      }
    yield latencies

  /** River's own benchmark against a scratch database on the same server: jobs per second, or why not. */
  def river(lab: LabDatabase, script: String, n: Int): IO[Either[String, Double]] =
    val database = s"weir_lab_river_${ProcessHandle.current().pid()}"
    val (jdbc, props) = DatabaseConfig.toJdbc(lab.url)
    val hostPort = jdbc.stripPrefix("jdbc:postgresql://").takeWhile(_ != '/')
    val user = Option(props.getProperty("user")).getOrElse("postgres")
    val password = Option(props.getProperty("password")).fold("")(":" + _)
    val url = s"postgres://$user$password@$hostPort/$database"
    if !java.nio.file.Files.isRegularFile(java.nio.file.Paths.get(script)) then
      IO.pure(Left(s"no River script at $script"))
    else
      Resource.make(lab.autocommit(s"CREATE DATABASE $database"))(_ =>
        lab.autocommit(s"DROP DATABASE IF EXISTS $database")
      ).use { _ =>
        IO.blocking {
          val p = new ProcessBuilder("bash", script, url, n.toString).redirectErrorStream(true).start()
          val out = new String(p.getInputStream.readAllBytes())
          (p.waitFor(), out)
        }.map { (code, out) =>
          val rate =
            """overall job/sec \[\s*([0-9.]+)\s*\]""".r.findFirstMatchIn(out).map(_.group(1).toDouble)
          rate.toRight(
            s"River's benchmark exited $code: ${out.linesIterator.toList.takeRight(3).mkString(" / ")}"
          )
        }
      }
