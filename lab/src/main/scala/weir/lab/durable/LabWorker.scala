package weir.lab.durable

import cats.effect.{ExitCode, IO, Resource}
import cats.syntax.all.*
import doobie.implicits.*
import com.zaxxer.hikari.{HikariConfig, HikariDataSource}
import weir.{Limit, Pipeline, Retry}
import weir.runtime.WeirApp
import weir.postgres.*

import scala.concurrent.duration.*

/**
 * One worker process of `./weir lab durable`, started by the lab as a child JVM. It prints `worker <id>`
 * once registered, then serves the queue: with `record`, each task's handler first writes one execution
 * row (task, attempt, worker, key, the database's clock) so that the lab can count duplicates and check
 * key order; with `noop` the handler does nothing (the throughput run), and with `pair` nothing either, and a
 * second worker serves `<queue>-kept` alike but keeps its completed tasks (`keepCompleted`, as a workflow's
 * are); with `workflow` (the workflow
 * phase, [[WorkflowPhase]]) it writes a row of `wf_executions` (task, payload, attempt, worker, the
 * database's clock, and for a batch's callback the counts its batch ended with), then fails the task if
 * its payload is negative (the lab enqueues such tasks with one attempt, so they end dead). It ends when
 * the queue is empty (`record`) or when it is told to stop (SIGTERM: the worker drains and hands back what
 * it holds).
 *
 * It rides out a restart of the server as the lab does ([[Retrying]]): its start (the pools, the worker's
 * registration) is retried; weir's worker retries its own calls, and runs again a task whose record failed. An error it cannot
 * survive ends it with one line on standard output (which the lab passes on) and exit code 1.
 *
 * args: url schema queue limit record|noop|pair|workflow heartbeatMillis deadAfterMillis
 */
object LabWorker extends WeirApp:

  /** Payloads from here on are batches' callbacks (`workflow`): their handler reads the batch they ended. */
  val callbackBase: Int = 1000000000

  /** What a `workflow` task with a negative payload fails with. */
  final class FailsByDesign(payload: Int)
      extends RuntimeException(s"task with payload $payload fails by design")

  /**
   * Says on standard output, which the lab passes on, when this worker rescued tasks of others and when its
   * database calls failed (each is retried): the lab's record of why a rescue came late.
   */
  private def report(w: DurableWorker[IO, Int]): IO[Unit] =
    def loop(before: WorkerStats): IO[Unit] =
      IO.sleep(250.millis) *> w.stats.flatMap { now =>
        val rescued = Option.when(now.rescued > before.rescued)(s"rescued ${now.rescued - before.rescued}")
        val failed = Option.when(now.databaseErrors > before.databaseErrors)(
          s"${now.databaseErrors - before.databaseErrors} database error(s), the last: " +
            now.lastError.fold("")(e => String.valueOf(e.getMessage).linesIterator.nextOption().getOrElse(""))
        )
        val said = (rescued ++ failed).toList
        IO.realTimeInstant.flatMap(at => IO.println(s"$at ${said.mkString("; ")}")).whenA(said.nonEmpty) *>
          loop(now)
      }
    w.stats.flatMap(loop)

  def run(args: List[String]): IO[ExitCode] =
    args match
      case List(url, schemaName, queue, limit, mode, heartbeat, deadAfter)
          if Set("record", "noop", "pair", "workflow")(mode) =>
        val schema = Schema(schemaName)
        val record = mode == "record"
        val workflow = mode == "workflow"
        val config = WorkerConfig(
          queue = queue,
          heartbeat = heartbeat.toLong.millis,
          deadAfter = deadAfter.toLong.millis,
          pollInterval = 200.millis,
          backoff =
            Retry.exponential(base = Duration.Zero, maxAttempts = Int.MaxValue, maxDelay = Duration.Zero),
          keepCompleted = record || workflow,
          stopWhenEmpty = record
        )
        // the recording INSERTs are the lab's, not weir's: they need not wait for the WAL flush (a killed
        // worker JVM loses none of them; only a crash of the server could)
        val recording = url + (if url.contains("?") then "&" else "?") +
          "options=-c%20synchronous_commit%3Doff"
        val recorder = Resource.make(IO.blocking {
          val (jdbc, props) = DatabaseConfig.toJdbc(recording)
          val hikari = new HikariConfig()
          hikari.setJdbcUrl(jdbc)
          hikari.setDataSourceProperties(props)
          hikari.setMaximumPoolSize(16)
          new HikariDataSource(hikari)
        })(ds => IO.blocking(ds.close()))
        val connections = Retrying.resource("the worker's connections")(
          (Database.connect[IO](DatabaseConfig(url, schema = schema, poolSize = 4)), recorder).tupled
        )
        connections.use { (db, ds) =>
          val insert =
            s"INSERT INTO ${schema("executions")} (task_id, attempt, worker, ordering_key) VALUES (?, ?, ?, ?)"
          // one blocking call per record, on a plain pooled connection in autocommit. A record is not retried
          // here: one that fails fails the run, which weir runs again (a new run, with its own record). A record
          // retried in place would reach the server after the outage, behind runs of the task's key that
          // started later, and its place in the record would no longer be its run's
          val insertRun =
            s"""INSERT INTO ${schema(
                "wf_executions"
              )} (task_id, payload, attempt, worker, batch_completed, batch_dead,
                  batch_cancelled) VALUES (?, ?, ?, ?, ?, ?, ?)"""
          def recordRun(owner: Long, job: Job[Int], batch: Option[BatchProgress]): IO[Unit] = IO.blocking {
            val c = ds.getConnection
            try
              val ps = c.prepareStatement(insertRun)
              ps.setLong(1, job.id)
              ps.setInt(2, job.payload)
              ps.setInt(3, job.attempt)
              ps.setLong(4, owner)
              batch match
                case Some(b) =>
                  ps.setLong(5, b.completed)
                  ps.setLong(6, b.dead)
                  ps.setLong(7, b.cancelled)
                case None => (5 to 7).foreach(ps.setNull(_, java.sql.Types.BIGINT))
              ps.executeUpdate(): Unit
            finally c.close()
          }
          def handle(owner: Long)(job: Job[Int]): IO[Unit] =
            if workflow then
              val batch =
                if job.payload >= callbackBase then job.batch.transact(db.transactor) else IO.none
              batch.flatMap(recordRun(owner, job, _)) *>
                IO.raiseError(new FailsByDesign(job.payload)).whenA(job.payload < 0)
            else if !record then IO.unit
            else
              IO.blocking {
                val c = ds.getConnection
                try
                  val ps = c.prepareStatement(insert)
                  ps.setLong(1, job.id)
                  ps.setInt(2, job.attempt)
                  ps.setLong(3, owner)
                  ps.setString(4, job.orderingKey.orNull)
                  ps.executeUpdate(): Unit
                finally c.close()
              }
          // `pair`: a second worker in this JVM serves `<queue>-kept`, keeping its completions, so that the
          // two queues' tasks run on code compiled alike
          val kept = Option.when(mode == "pair")(config.copy(queue = s"$queue-kept", keepCompleted = true))
          def serve(config: WorkerConfig) =
            Resource.eval(IO.deferred[Long]).flatMap { owner =>
              Retrying.resource("the worker's start")(
                DurableWorker.start[IO, Int, Unit](db, config) { source =>
                  Pipeline(
                    source
                  ).process(job => owner.get.flatMap(handle(_)(job))).withLimit(Limit.fixed(limit.toInt))
                }
              ).evalTap(w => owner.complete(w.id))
            }
          (serve(config), kept.traverse(serve)).tupled.use { (w, k) =>
            IO.println(s"worker ${w.id}") *>
              (report(w).background, k.traverse_(report).background).tupled.surround(
                (w.running.join.void, k.traverse_(_.running.join.void)).parTupled.void
              )
          }
        }.as(ExitCode.Success).handleErrorWith(e =>
          IO.println(s"worker failed: ${Retrying.firstLine(e)}").as(ExitCode(1))
        )
      case _ =>
        IO.consoleForIO.errorln(
          s"usage: LabWorker url schema queue limit record|noop|pair|workflow heartbeatMs deadAfterMs, was: $args"
        )
          .as(ExitCode(2))
