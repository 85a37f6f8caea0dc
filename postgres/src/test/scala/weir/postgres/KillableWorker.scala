package weir.postgres

import cats.effect.{ExitCode, IO, IOApp, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.{Limit, Pipeline}
import weir.testkit.Eventually

import java.io.{BufferedReader, InputStreamReader}
import java.nio.charset.StandardCharsets
import scala.concurrent.duration.*

/**
 * A worker process for [[KillSuite]], [[SharedSessionKillSuite]], [[GraphKillSuite]] and [[BatchKillSuite]]
 * ([[launch]] starts one): serves `queue` until it is empty, recording every execution (task, attempt, worker)
 * in `<schema>.executions` as the handler starts, before a short sleep. `queue` may name several queues,
 * comma-separated: a worker for each, on one `Database` (so one session), each printing its id. With
 * `standby` it connects, then starts its workers only once it reads a line on standard input ([[standby]]).
 *
 * args: url schema queue limit listen deadAfterMillis start (`now` or `standby`)
 */
object KillableWorker extends IOApp:

  def run(args: List[String]): IO[ExitCode] =
    val List(url, schemaName, queues, limit, listen, deadAfter, start) = args: @unchecked
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
    // a replacement started ahead of its kill boots and connects meanwhile, with no worker of its own, and so
    // no session or heartbeat, until the suite's line
    val go =
      if start == "standby" then IO.blocking(Console.in.readLine()).void else IO.unit
    Database.connect[IO](DatabaseConfig(url, schema = schema, poolSize = 4)).use { db =>
      val record = (worker: Long, job: Job[Int]) =>
        (Fragment.const(
          s"INSERT INTO ${schema("executions")} (task_id, attempt, worker, ordering_key) VALUES ("
        ) ++
          fr0"${job.id}, ${job.attempt}, $worker, ${job.orderingKey})").update.run.transact(db.transactor)
      go *> queues.split(',').toVector.parTraverse { queue =>
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

  /**
   * Waits until `ready` holds of what `probe` reads, then SIGKILLs `victim`. Each probe reads while the victim
   * is stopped (SIGSTOP), and one that is not yet satisfied lets it go on (SIGCONT): a claim the probe saw the
   * victim hold is still held at the kill, where a running victim could finish it in between and leave
   * nothing to rescue; a probe that fails lets it go on too. Returns what the last probe read.
   */
  def killOnce[A](
      victim: Process,
      what: String,
      probe: IO[A],
      within: FiniteDuration
  )(ready: A => Boolean): IO[A] =
    val go = signal(victim, "CONT")
    val stopped = signal(victim, "STOP") *> probe.onError(_ => go).flatTap(a => go.unlessA(ready(a)))
    Eventually.until(what, stopped, within)(ready) <* IO.blocking(victim.destroyForcibly().waitFor())

  /** Sends `process` the signal `name` with the shell's `kill`, and waits until it is sent. */
  private def signal(process: Process, name: String): IO[Unit] =
    val command = List("sh", "-c", s"kill -$name ${process.pid}")
    IO.blocking(new ProcessBuilder(command*).inheritIO().start().waitFor()).flatMap { code =>
      IO.raiseError(new IllegalStateException(s"${command.last} exited with $code")).whenA(code != 0)
    }

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
    process(db, queues, limit, liveness, standby = false).evalMap((p, out) =>
      ids(p, out, queues.size).tupleLeft(p)
    )

  /**
   * A replacement worker JVM started ahead of the kill it follows: it boots and connects meanwhile, with no
   * worker (so no session, no heartbeat, no claim) until `go`, which sends it the line that starts its
   * workers and returns their ids once they have started, as [[launch]] does (waiting for the JVM to come up
   * first if it is not up yet). A suite starts it beside the workers it will kill, so that its start-up is
   * not waited for after the kill; acquiring it waits for nothing. The resource kills it (SIGKILL) if it is
   * still running on release.
   */
  def standby(
      db: Database[IO],
      queues: Vector[String],
      limit: Int,
      liveness: Liveness
  ): Resource[IO, (Process, IO[Vector[Long]])] =
    process(db, queues, limit, liveness, standby = true).map { (p, out) =>
      val go = IO.blocking {
        p.getOutputStream.write("go\n".getBytes(StandardCharsets.UTF_8))
        p.getOutputStream.flush()
      } *> ids(p, out, queues.size)
      (p, go)
    }

  private def process(
      db: Database[IO],
      queues: Vector[String],
      limit: Int,
      liveness: Liveness,
      standby: Boolean
  ): Resource[IO, (Process, BufferedReader)] =
    val command = ChildCommand(
      "weir.postgres.KillableWorker",
      heapMiB = 256,
      List(
        TestDatabase.url,
        db.schema.name,
        queues.mkString(","),
        limit.toString,
        liveness.listen.toString,
        liveness.deadAfter.toMillis.toString,
        if standby then "standby" else "now"
      )
    )
    Resource
      .make(IO.blocking(new ProcessBuilder(command*).redirectErrorStream(true).start()))(p =>
        IO.blocking(p.destroyForcibly().waitFor()).void
      )
      .map(p => (p, new BufferedReader(new InputStreamReader(p.getInputStream))))

  /** The ids of a child's `n` workers, from its `worker <id>` lines. */
  private def ids(p: Process, out: BufferedReader, n: Int): IO[Vector[Long]] =
    ChildCommand.reading(p, out, 60.seconds) { lines =>
      val ids =
        lines.filter(_.startsWith("worker ")).take(n).map(_.stripPrefix("worker ").trim.toLong).toVector
      if ids.size < n then sys.error(s"worker exited (${p.waitFor()}) before starting")
      ids
    }
