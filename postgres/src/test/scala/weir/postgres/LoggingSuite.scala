package weir.postgres

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres
import org.typelevel.log4cats.LoggerFactory
import weir.{Limit, Pipeline}
import weir.testing.RecordedLogs
import weir.testkit.Eventually

import java.nio.file.{Files, Path}
import scala.concurrent.duration.*

/**
 * What a worker logs through the user's `LoggerFactory`: a streak of database errors once when it begins
 * and once when it ends, across a real restart of the server; a pause and a resume of its queue once
 * each; a schema it cannot run against, at ERROR; and never a line per task.
 */
class LoggingSuite extends DbSuite:

  override def munitIOTimeout: Duration = 3.minutes

  private val streakBegins = "failed (retried; logged again once it succeeds)"
  private val streakEnds = raw".*succeeded again after (\d+) database error\(s\) over \d+ ms".r

  /** Polls `check` every 50 ms until it holds, failing with `what` after a minute. */
  private def eventually(what: String)(check: IO[Boolean]): IO[Unit] =
    Eventually.until(what, check, within = 1.minute)(identity).void

  /** For each logger, whether every WARN that began a streak was followed by the INFO that ended it. */
  private def streaksEnded(lines: Vector[RecordedLogs.Line]): Boolean =
    lines.groupBy(_.logger).values.forall(_.lastOption.forall(_.level == "INFO"))

  private def freePort(): Int =
    val s = new java.net.ServerSocket(0)
    try s.getLocalPort
    finally s.close()

  private def server(port: Int, dir: Path): IO[EmbeddedPostgres] =
    IO.blocking(
      EmbeddedPostgres.builder().setPort(port).setDataDirectory(dir).setCleanDataDirectory(false).start()
    )

  test(
    "a database restart: each part logs one WARN when its streak of errors begins and one INFO with its count when it ends"
  ) {
    val port = freePort()
    val config = DatabaseConfig(
      s"postgresql://postgres:postgres@127.0.0.1:$port/postgres",
      poolSize = 2,
      connectTimeout = 500.millis
    )
    val workerConfig = TestWorkers.config("logged").copy(
      pollInterval = 100.millis,
      heartbeat = 250.millis,
      deadAfter = 30.seconds, // longer than the outage: this test is about reconnecting, not rescuing
      retention = None,
      stopWhenEmpty = false
    )
    val dir = Resource.make(IO.blocking(Files.createTempDirectory("weir-logging")))(d =>
      IO.blocking(org.apache.commons.io.FileUtils.deleteDirectory(d.toFile))
    )
    (dir, Resource.eval(RecordedLogs())).tupled.use { (dataDir, logs) =>
      given LoggerFactory[IO] = logs
      Resource.make(server(port, dataDir).flatMap(Ref[IO].of))(ref =>
        ref.get.flatMap(pg => IO.blocking(pg.close()))
      ).use { current =>
        for
          _ <- Database.migrate[IO](config)
          done <- Ref[IO].of(0)
          seen <- Database.connect[IO](config).use { db =>
            val queue = TaskQueue[IO, Int](db, "logged")
            def tasks(n: Int): IO[Unit] =
              done.get.flatMap(before =>
                queue.enqueueMany((1 to n).map(NewTask(_))) *>
                  eventually(s"$n more tasks done")(done.get.map(_ >= before + n))
              )
            val worker = DurableWorker.start[IO, Int, Unit](db, workerConfig)(source =>
              Pipeline(source).process(_ => done.update(_ + 1)).withLimit(Limit.fixed(4))
            )
            Ref[IO].of(Option.empty[DurableWorker[IO, Int]]).flatMap { kept =>
              worker.use { w =>
                for
                  _ <- kept.set(Some(w))
                  _ <- tasks(100)
                  quiet <- logs.lines
                  _ <- current.get.flatMap(pg => IO.blocking(pg.close()))
                  // down until the heartbeat has begun its streak and the worker has ridden out many errors
                  _ <- eventually("the heartbeat's streak begun, and 10 database errors")(
                    (logs.lines, w.stats).mapN((ls, s) =>
                      ls.exists(_.logger == "weir.postgres.worker.heartbeat") && s.databaseErrors >= 10
                    )
                  )
                  during <- logs.lines
                  _ <- server(port, dataDir).flatMap(current.set)
                  _ <- tasks(100)
                  _ <- eventually("every streak ended")(logs.lines.map(streaksEnded))
                  // and once more, with every part having run again since
                  _ <- tasks(100)
                  _ <- eventually("every streak ended")(logs.lines.map(streaksEnded))
                yield (quiet, during)
              }.flatMap((quiet, during) => kept.get.flatMap(_.get.stats).map((quiet, during, _)))
            }
          }
          (quiet, during, stats) = seen
          lines <- logs.lines
        yield
          def show = lines.map(l => s"${l.level} ${l.logger}: ${l.message}").mkString("\n")
          assertEquals(quiet, Vector.empty, "100 tasks done: nothing logged")
          assert(during.forall(_.level == "WARN"), s"while the server was down:\n$show")
          assert(lines.forall(_.logger.startsWith("weir.postgres.worker.")), show)
          assert(lines.exists(_.logger == "weir.postgres.worker.heartbeat"), show)
          // per part: WARN, INFO (a part whose pooled connection died after the restart may begin a second
          // streak, which then ends too)
          lines.groupBy(_.logger).foreach { (logger, own) =>
            assertEquals(
              own.map(_.level),
              Vector.fill(own.size / 2)(Vector("WARN", "INFO")).flatten,
              s"$logger:\n$show"
            )
            own.filter(_.level == "WARN").foreach { l =>
              assert(l.message.contains(streakBegins) && l.error.isDefined, l)
              assertEquals(l.context.get("weir.queue"), Some("logged"))
            }
          }
          val counts = lines.collect {
            case l if l.level == "INFO" =>
              l.message match
                case streakEnds(n) => n.toLong
                case other => fail(s"not a streak's end: $other")
          }
          // every error was counted in one streak, and logged only at its beginning
          assertEquals(counts.sum, stats.databaseErrors, show)
          assert(counts.sum > lines.count(_.level == "WARN"), show)
          assert(lines.size <= 20, s"a handful of lines for 300 tasks and a restart:\n$show")
      }
    }
  }

  withDb("a pause and a resume of the queue are logged once each, and its tasks not at all") { db =>
    RecordedLogs().flatMap { logs =>
      given LoggerFactory[IO] = logs
      val config = TestWorkers.config("paused").copy(stopWhenEmpty = false, retention = None)
      val admin = TaskAdmin(db)
      val queue = TaskQueue[IO, Int](db, "paused")
      def onQueue = logs.lines.map(_.filter(_.logger == "weir.postgres.worker.queue"))
      Ref[IO].of(0).flatMap { done =>
        DurableWorker.start[IO, Int, Unit](db, config)(source =>
          Pipeline(source).process(_ => done.update(_ + 1))
        ).use { _ =>
          for
            _ <- queue.enqueueMany((1 to 50).map(NewTask(_)))
            _ <- eventually("50 tasks done")(done.get.map(_ == 50))
            _ <- admin.queues.pause("paused")
            _ <- eventually("the pause logged")(onQueue.map(_.nonEmpty))
            _ <- queue.enqueueMany((1 to 50).map(NewTask(_)))
            _ <- admin.queues.resume("paused")
            _ <- eventually("50 more tasks done")(done.get.map(_ == 100))
          yield ()
        } *> logs.lines.map { lines =>
          assertEquals(
            lines.map(l => (l.level, l.logger, l.message)),
            Vector(
              (
                "INFO",
                "weir.postgres.worker.queue",
                lines.head.message
              ),
              ("INFO", "weir.postgres.worker.queue", lines(1).message)
            )
          )
          assert(
            lines.head.message.endsWith("the queue is paused: no task of it is claimed until it is resumed")
          )
          assert(lines(1).message.endsWith("the queue is resumed"))
          assert(lines.head.message.startsWith("queue 'paused', worker "))
        }
      }
    }
  }

  withDb("a rescue round is logged once, with its counts, not once per task") { db =>
    val sql = new weir.postgres.internal.Sql(db.schema)
    val config = TestWorkers.config("rescued").copy(stopWhenEmpty = false, retention = None)
    for
      logs <- RecordedLogs()
      _ <- TaskQueue[IO, Int](db, "rescued").enqueueMany((1 to 3).map(NewTask(_)))
      // a worker that claimed the three tasks, then vanished with its row
      gone <- db.run(sql.register("gone", 1000))
      _ <- db.run(sql.claim("rescued", gone, 3, 60000))
      _ <- Rows.exec(s"DELETE FROM ${db.schema("workers")} WHERE id = $gone")
      done <- Ref[IO].of(0)
      _ <- {
        given LoggerFactory[IO] = logs
        DurableWorker.start[IO, Int, Unit](db, config)(source =>
          Pipeline(source).process(_ => done.update(_ + 1))
        ).use(_ => eventually("the three tasks rescued and done")(done.get.map(_ == 3)))
      }
      lines <- logs.lines
    yield
      assertEquals(lines.map(l => (l.level, l.logger)), Vector(("INFO", "weir.postgres.worker.rescue")))
      assert(
        lines.head.message.endsWith(
          "rescued 3 task(s) of dead workers or expired leases (3 available again, 0 dead, 0 cancelled)"
        ),
        lines.head.message
      )
  }

  test("a schema the library cannot run against is logged at ERROR before connect fails") {
    RecordedLogs().flatMap { logs =>
      given LoggerFactory[IO] = logs
      val schema = TestDatabase.freshSchema()
      Database.connect[IO](TestDatabase.config(schema)).use_.attempt.flatMap { result =>
        logs.lines.map { lines =>
          val error = result.swap.toOption
          assert(error.exists(_.isInstanceOf[SchemaError]), result)
          assertEquals(
            lines.map(l => (l.level, l.logger, l.error)),
            Vector(("ERROR", "weir.postgres.schema", error))
          )
          assert(lines.head.message.contains(s"schema '${schema.name}' has no weir tables"), lines)
        }
      }
    } *> noLeftovers
  }

  withDb(
    "a scheduler's streak of errors is logged once when it begins and once when a round succeeds again"
  ) {
    db =>
      RecordedLogs().flatMap { logs =>
        given LoggerFactory[IO] = logs
        val schedules = db.schema("schedules")
        def timing(set: String) = Rows.exec(s"UPDATE $schedules SET $set WHERE name = 'logged-beat'")
        val schedule = Schedule.every("logged-beat", 100.millis, queue = "logged-beats", payload = 1)
        Scheduler.resource(db, Vector(schedule), checkEvery = 50.millis).use { scheduler =>
          for
            _ <- eventually("a first tick")(scheduler.stats.map(_.ticks >= 1))
            // a timing that does not read back (no such zone): the row fails every round
            _ <- timing("cron = '* * * * *', zone = 'Nowhere/Atlantis', every_ms = NULL")
            _ <- eventually("three rounds failed")(scheduler.stats.map(_.databaseErrors >= 3))
            ticked <- scheduler.stats.map(_.ticks)
            _ <- timing("cron = NULL, zone = NULL, every_ms = 100")
            _ <- eventually("ticking again")(scheduler.stats.map(_.ticks > ticked))
            _ <- eventually("the streak's end logged")(logs.lines.map(_.size == 2))
            stats <- scheduler.stats
            lines <- logs.lines
          yield
            val show = lines.mkString("\n")
            assertEquals(
              lines.map(l => (l.level, l.logger)),
              Vector(("WARN", "weir.postgres.scheduler"), ("INFO", "weir.postgres.scheduler")),
              show
            )
            assert(lines.head.message.startsWith("scheduler of 'logged-beat': ticking failed (retried"), show)
            assert(lines.head.message.contains("Nowhere/Atlantis"), show)
            assertEquals(lines.head.error.map(_.getClass), stats.lastError.map(_.getClass), show)
            val ended =
              raw"scheduler of 'logged-beat': ticking succeeded again after (\d+) error\(s\) over \d+ ms".r
            lines(1).message match
              case ended(count) => assertEquals(count.toLong, stats.databaseErrors, show)
              case other => fail(s"not a streak's end: $other")
        }
      }
  }
