package weir.postgres

import cats.effect.{ExitCode, IO, IOApp}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.{Limit, Pipeline}

import scala.concurrent.duration.*

/**
 * A worker process for [[KillSuite]]: serves `queue` until it is empty, recording every execution (task,
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
