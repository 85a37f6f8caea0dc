package weir.postgres

import cats.effect.{ExitCode, IO, IOApp, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.{Limit, Pipeline}

import java.io.{BufferedReader, InputStreamReader}
import scala.concurrent.duration.*

/**
 * A worker process for [[KillSuite]], [[GraphKillSuite]] and [[BatchKillSuite]] ([[launch]] starts one): serves `queue` until it is empty, recording every execution (task,
 * attempt, worker) in `<schema>.executions` as the handler starts, before a short sleep. `queue` may name
 * several queues, comma-separated: a worker for each, on one `Database` (so one session), each printing
 * its id.
 *
 * args: url schema queue limit listen deadAfterMillis
 */
object KillableWorker extends IOApp:

  def run(args: List[String]): IO[ExitCode] =
    val List(url, schemaName, queues, limit, listen, deadAfter) = args: @unchecked
    val schema = Schema(schemaName)
    def config(queue: String) = TestWorkers
      .config(queue)
      .copy(
        pollInterval = 100.millis,
        listen = listen.toBoolean,
        heartbeat = 250.millis,
        deadAfter = deadAfter.toLong.millis,
        lease = 10.minutes
      )
    Database.connect[IO](DatabaseConfig(url, schema = schema, poolSize = 4)).use { db =>
      val record = (worker: Long, job: Job[Int]) =>
        (Fragment.const(
          s"INSERT INTO ${schema("executions")} (task_id, attempt, worker, ordering_key) VALUES ("
        ) ++
          fr0"${job.id}, ${job.attempt}, $worker, ${job.orderingKey})").update.run.transact(db.transactor)
      queues.split(',').toVector.parTraverse { queue =>
        DurableWorker
          .start[IO, Int, Unit](db, config(queue)) { source =>
            Pipeline(source).process(job =>
              IO.defer(record(current.getOrDefault(queue, -1L), job)) *> IO.sleep((job.payload % 20).millis)
            )
              .withLimit(Limit.fixed(limit.toInt))
          }
          .use { worker =>
            IO(current.put(queue, worker.id)).void *> IO.println(s"worker ${worker.id}") *>
              worker.running.join.void
          }
      }
        .as(ExitCode.Success)
    }

  // each queue's worker id, set once the worker has started
  private val current = new java.util.concurrent.ConcurrentHashMap[String, Long]

  /** How the children of a test find a dead worker, as [[WorkerConfig]] sets it. */
  final case class Liveness(listen: Boolean, deadAfter: FiniteDuration)

  /**
   * A worker JVM serving `queues` of `db`'s schema, a worker for each on one `Database`, and the workers'
   * ids; the resource kills it (SIGKILL) if it is still running on release.
   */
  def launch(
      db: Database[IO],
      queues: Vector[String],
      limit: Int,
      liveness: Liveness
  ): Resource[IO, (Process, Vector[Long])] =
    val command = ChildCommand(
      "weir.postgres.KillableWorker",
      heapMiB = 256,
      List(
        TestDatabase.url,
        db.schema.name,
        queues.mkString(","),
        limit.toString,
        liveness.listen.toString,
        liveness.deadAfter.toMillis.toString
      )
    )
    Resource
      .make(IO.blocking(new ProcessBuilder(command*).redirectErrorStream(true).start()))(p =>
        IO.blocking(p.destroyForcibly().waitFor()).void
      )
      .evalMap { p =>
        // a line names each worker's id
        IO.blocking {
          val reader = new BufferedReader(new InputStreamReader(p.getInputStream))
          val lines = Iterator.continually(reader.readLine()).takeWhile(_ != null)
          val ids =
            lines.filter(_.startsWith("worker ")).take(queues.size).map(_.stripPrefix("worker ").trim.toLong)
              .toVector
          if ids.size < queues.size then sys.error("worker exited before starting")
          (p, ids)
        }
      }
