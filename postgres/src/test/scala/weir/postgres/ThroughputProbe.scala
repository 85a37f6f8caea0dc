package weir.postgres

import cats.effect.{ExitCode, IO, IOApp}
import cats.syntax.all.*
import doobie.implicits.*
import weir.{Limit, Pipeline}

import scala.concurrent.duration.*

/** Temporary probe: args url tasks limit claimBatch keepCompleted workers */
object ThroughputProbe extends IOApp:
  def run(args: List[String]): IO[ExitCode] =
    val List(url, n, limit, batch, keep, workers) = args: @unchecked
    val schema = Schema(s"probe_${ProcessHandle.current().pid()}")
    val config = DatabaseConfig(url, schema = schema, poolSize = 8)
    val wc = WorkerConfig(
      queue = "p",
      claimBatch = batch.toInt,
      keepCompleted = keep.toBoolean,
      stopWhenEmpty = true,
      pollInterval = 50.millis
    )
    for
      _ <- Database.migrate[IO](config)
      _ <- Database.connect[IO](config).use { db =>
        val q = TaskQueue[IO, Int](db, "p")
        for
          t0 <- IO.monotonic
          _ <- (1 to n.toInt).grouped(10000).toList.traverse_(g => q.enqueueMany(g.map(NewTask(_))))
          t1 <- IO.monotonic
          _ <- IO.println(f"enqueue: ${n.toInt / (t1 - t0).toNanos.toDouble * 1e9}%.0f tasks/s")
          w = DurableWorker.start[IO, Int, Unit](
            db,
            wc
          )(Pipeline(_).process(_ => IO.unit).withLimit(Limit.fixed(limit.toInt)))
          t2 <- IO.monotonic
          _ <- List.fill(workers.toInt)(w.use(_.running.join)).parSequence_
          t3 <- IO.monotonic
          _ <- IO.println(f"work: ${n.toInt / (t3 - t2).toNanos.toDouble * 1e9}%.0f tasks/s")
        yield ()
      }
      _ <- Database.connect[IO](config).use(db =>
        doobie.Fragment.const(s"DROP SCHEMA ${schema.name} CASCADE").update.run.transact(db.transactor).void
      )
    yield ExitCode.Success
