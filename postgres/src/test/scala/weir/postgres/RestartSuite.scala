package weir.postgres

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres
import weir.{Limit, Pipeline, Retry}
import weir.testkit.Eventually

import java.nio.file.{Files, Path}
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/** The database server stops and starts again mid-run: workers ride it out and lose nothing. */
class RestartSuite extends DbSuite:

  override def munitIOTimeout: Duration = 3.minutes

  private def freePort(): Int =
    val s = new java.net.ServerSocket(0)
    try s.getLocalPort
    finally s.close()

  /** A server of this test's own on `port`, keeping its data in `dir` across a stop and a start. */
  private def server(port: Int, dir: Path): IO[EmbeddedPostgres] =
    IO.blocking(
      EmbeddedPostgres.builder().setPort(port).setDataDirectory(dir).setCleanDataDirectory(false).start()
    )

  test("a database restart mid-run loses nothing: every task completes, workers reconnect") {
    run(stop = (pg, _) => IO.blocking(pg.close()), lease = 1.minute)
  }

  test("a database crash mid-run (every server process SIGKILLed) loses nothing: undone commits run again") {
    // the worker's claims and results commit asynchronously, so the crash may undo the last of them: a task
    // whose completion was undone is running again for a worker that forgot it, and comes back when its
    // lease ends, hence the short lease
    run(stop = crash, lease = 1.second)
  }

  /**
   * Kills the server's postmaster and every process it started, as a power loss would end them, then lets
   * go of the data directory's lock that this JVM holds for the server (its stop finds nothing to stop).
   */
  private def crash(pg: EmbeddedPostgres, dir: Path): IO[Unit] = IO.blocking {
    val pid = Files.readAllLines(dir.resolve("postmaster.pid")).get(0).trim.toLong
    val postmaster = ProcessHandle.of(pid).orElseThrow()
    val all = postmaster.descendants().toList.asScala.toList :+ postmaster
    all.foreach(_.destroyForcibly(): Unit)
    all.foreach(_.onExit().join(): Unit)
    scala.util.Try(pg.close()): Unit
  }

  private def run(stop: (EmbeddedPostgres, Path) => IO[Unit], lease: FiniteDuration): IO[Unit] =
    val n = 3000
    val port = freePort()
    val config = DatabaseConfig(
      s"postgresql://postgres:postgres@127.0.0.1:$port/postgres",
      poolSize = 4,
      connectTimeout = 2.seconds
    )
    val workerConfig = WorkerConfig(
      queue = "restart",
      claimBatch = 20,
      pollInterval = 100.millis,
      heartbeat = 250.millis,
      deadAfter = 30.seconds, // longer than the outage: the point is reconnecting, not rescuing
      lease = lease,
      backoff = Retry.exponential(base = Duration.Zero, maxAttempts = Int.MaxValue, maxDelay = Duration.Zero),
      keepCompleted = true,
      stopWhenEmpty = true
    )
    val dir = Resource.make(IO.blocking(Files.createTempDirectory("weir-restart")))(d =>
      IO.blocking(org.apache.commons.io.FileUtils.deleteDirectory(d.toFile))
    )
    dir.use { dataDir =>
      Resource.make(server(port, dataDir).flatMap(Ref[IO].of))(ref =>
        ref.get.flatMap(pg => IO.blocking(pg.close()))
      ).use { current =>
        for
          _ <- Database.migrate[IO](config)
          succeeded <- Ref[IO].of(Map.empty[Int, Int])
          stats <- Database.connect[IO](config).use { db =>
            val worker = DurableWorker.start[IO, Int, Unit](db, workerConfig) { source =>
              Pipeline(source)
                .process(job =>
                  IO.sleep(1.milli) *>
                    succeeded.update(m => m.updated(job.payload, m.getOrElse(job.payload, 0) + 1))
                )
                .withLimit(Limit.fixed(8))
            }
            TaskQueue[IO, Int](db, "restart").enqueueMany((1 to n).map(NewTask(_))) *>
              (
                TestWorkers.statsAfterRun(worker),
                TestWorkers.statsAfterRun(worker),
                restartMidRun(current, stop, port, dataDir, succeeded, n / 3)
              )
                .parMapN((a, b, _) => (a, b))
          }
          ok <- succeeded.get
          done <- Database.connect[IO](config).use(db => countDone(db))
        yield
          assertEquals(done, (n.toLong, n.toLong, 0L), "(completed, distinct tasks completed, left in tasks)")
          assertEquals(ok.keySet, (1 to n).toSet)
          assert(stats._1.databaseErrors + stats._2.databaseErrors > 0, s"no database error was seen: $stats")
      }
    }

  private def restartMidRun(
      current: Ref[IO, EmbeddedPostgres],
      stop: (EmbeddedPostgres, Path) => IO[Unit],
      port: Int,
      dir: Path,
      succeeded: Ref[IO, Map[Int, Int]],
      after: Int
  )
      : IO[Unit] =
    Eventually.until(s"$after tasks succeeded", succeeded.get.map(_.size), 2.minutes, 20.millis)(_ >=
      after) *>
      current.get.flatMap(stop(_, dir)) *>
      IO.sleep(2.seconds) *>
      server(port, dir).flatMap(current.set)

  private def countDone(db: Database[IO]): IO[(Long, Long, Long)] =
    import doobie.*
    import doobie.implicits.*
    Fragment.const(
      s"""SELECT count(*), count(DISTINCT id), (SELECT count(*) FROM ${db.schema("tasks")})
          FROM ${db.schema("finished")} WHERE state = 'completed'"""
    ).query[(Long, Long, Long)].unique.transact(db.transactor)
