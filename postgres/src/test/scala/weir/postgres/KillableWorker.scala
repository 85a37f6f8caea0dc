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
    // a heartbeat long enough that a beat late on a machine busy with several JVMs starting does not make the
    // worker refuse its own claims at their start (it starts one only while its last beat is younger than three
    // quarters of a period, and beats twice a period): a victim that refused its first claims would otherwise
    // watch the others run the queue
    def config(queue: String) = TestWorkers
      .config(queue)
      .copy(
        pollInterval = 100.millis,
        listen = listen.toBoolean,
        heartbeat = 1.second,
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
        val settings = config(queue)
        DurableWorker
          .start[IO, Int, Unit](db, settings) { source =>
            Pipeline(source).process(job =>
              IO.defer(record(current.getOrDefault(queue, -1L), job)) *> IO.sleep((job.payload % 20).millis)
            )
              .withLimit(Limit.fixed(limit.toInt))
              // claims held in memory bounded to two batches: each worker claims its share as it runs,
              // rather than the first one up claiming most of the queue into a buffer of the default size
              .withBuffer(2 * settings.claimBatch)
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
   * Waits until `ready` holds of what `probe` reads, then SIGKILLs `victim`. Probes read while the victim
   * runs; one that sees `ready` is read again with the victim stopped (SIGSTOP), and only a stopped read that
   * still sees it is followed by the kill, the victim still stopped: a claim that read saw the victim hold is
   * still held at the kill, where a running victim could finish it in between and leave nothing to rescue.
   * A stopped read that no longer sees it, or fails, lets the victim go on (SIGCONT).
   *
   * The victim is stopped only to confirm: a victim stopped for every probe spends much of the wait stopped,
   * its heartbeat comes late, and it refuses its own claims at their start (a worker starts a claim only while
   * its last heartbeat is recent: [[WorkerStats.refused]]), so it may never hold a running one while the
   * others end the run. Fails naming `what` as soon as the victim is seen to have exited before it, and returns
   * what the last probe read.
   */
  def killOnce[A](
      victim: Process,
      what: String,
      probe: IO[A],
      within: FiniteDuration
  )(ready: A => Boolean): IO[A] =
    val go = signal(victim, "CONT", what)
    // a stop that is never seen, or a read that fails, lets the victim go on
    val confirmed =
      signal(victim, "STOP", what) *> (stopped(victim, what) *> probe).onError(_ => go)
        .flatTap(a => go.unlessA(ready(a)))
    val read = whileAlive(victim, what)(probe.flatMap(a => if ready(a) then confirmed else IO.pure(a)))
    Eventually.until(what, read, within)(ready) <* IO.blocking(victim.destroyForcibly().waitFor())

  /**
   * Sends `process` the signal `name` with the shell's `kill`, and waits until it is sent; fails saying the
   * process exited before `what` if it is no longer there to receive it.
   */
  private def signal(process: Process, name: String, what: String): IO[Unit] =
    val command = List("sh", "-c", s"kill -$name ${process.pid}")
    IO.blocking(new ProcessBuilder(command*).inheritIO().start().waitFor()).flatMap { code =>
      IO.blocking(process.isAlive).flatMap { alive =>
        if alive && code == 0 then IO.unit
        else if alive then IO.raiseError(new IllegalStateException(s"${command.last} exited with $code"))
        else exited(process, what)
      }
    }

  /**
   * Waits until the kernel shows `process` stopped (state `T` in `/proc/<pid>/stat`): `kill` returns once the
   * signal is queued, and a victim asleep in a system call takes it only when the scheduler next runs it, so a
   * read right after the signal may still race a running victim. Fails naming `what` if the process exits
   * first, or after 10 seconds naming the state it was last seen in.
   */
  private def stopped(process: Process, what: String): IO[Unit] =
    val stat = java.nio.file.Path.of(s"/proc/${process.pid}/stat")
    // the state follows the command name, which is in parentheses and may itself hold spaces or parentheses
    val state =
      IO.blocking(java.nio.file.Files.readString(stat)).map(s => s.substring(s.lastIndexOf(')') + 2).take(1))
    // a process that exits between the two reads leaves no file to read: said as its exit, not as the read's error
    val read =
      whileAlive(process, what)(state.handleErrorWith(e => whileAlive(process, what)(IO.raiseError(e))))
    Eventually.until(s"process ${process.pid} stopped by SIGSTOP", read, 10.seconds, 1.milli)(_ == "T").void

  /** Runs `fa` if `process` is alive; else fails saying it exited before `what`. */
  private def whileAlive[A](process: Process, what: String)(fa: IO[A]): IO[A] =
    IO.blocking(process.isAlive).ifM(fa, exited(process, what))

  /** Fails saying the worker JVM `process` exited, with its exit code, before `what`. */
  private def exited[A](process: Process, what: String): IO[A] =
    IO.blocking(process.exitValue()).flatMap(code =>
      IO.raiseError(new IllegalStateException(s"worker JVM ${process.pid} exited ($code) before: $what"))
    )

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
