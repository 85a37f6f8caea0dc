package weir.postgres

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.testkit.Eventually

import java.io.{BufferedReader, InputStreamReader}
import scala.annotation.tailrec
import scala.concurrent.duration.*

/** Scheduler JVMs SIGKILLed while they tick: no tick lost, none doubled. */
class ScheduleKillSuite extends DbSuite:

  override def munitIOTimeout: Duration = 3.minutes

  /** A scheduler JVM, started once it says it schedules; SIGKILLed on release if still running. */
  private def child(db: Database[IO], name: String, every: FiniteDuration): Resource[IO, Process] =
    val command = ChildCommand(
      "weir.postgres.KillableScheduler",
      heapMiB = 128,
      List(TestDatabase.url, db.schema.name, name, every.toMillis.toString)
    )
    Resource
      .make(IO.blocking(new ProcessBuilder(command*).redirectErrorStream(true).start()))(p =>
        IO.blocking(p.destroyForcibly().waitFor()).void
      )
      .evalTap { p =>
        // its line, not its being alive, says it runs: a JVM that fails to start may not have exited yet
        ChildCommand.reading(p, new BufferedReader(new InputStreamReader(p.getInputStream)), 60.seconds) {
          lines =>
            // no read past the line: the child prints nothing more while it runs
            @tailrec def started(before: Vector[String]): Unit =
              if !lines.hasNext then sys.error(s"scheduler exited before starting: ${before.mkString("\n")}")
              else
                lines.next() match
                  case "scheduling" => ()
                  case line => started(before :+ line)
            started(Vector.empty)
        }
      }

  private def ticks(db: Database[IO], name: String): IO[Long] =
    TaskAdmin(db).overview.schedules.map(_.find(_.name == name).fold(0L)(_.ticks))

  private def waitFor(db: Database[IO], name: String, atLeast: Long): IO[Long] =
    Eventually.until(s"$atLeast ticks of $name", ticks(db, name), within = 60.seconds)(_ >= atLeast)

  withDb(
    "scheduler JVMs SIGKILLed while ticking beside a live one: every tick enqueued once, none left out"
  ) {
    db =>
      val name = "killed"
      val every = 100.millis
      val schedule =
        Schedule.every(name, every, queue = "ticks", payload = 0, missed = Schedule.Missed.catchUp(100000))
      for
        _ <- Scheduler.resource(db, Vector(schedule), checkEvery = 50.millis).use { _ =>
          // three rounds: a JVM starts, ticks beside this one, and is killed wherever it is
          (1 to 3).toVector.traverse_ { _ =>
            child(db, name, every).use { p =>
              ticks(db, name).flatMap(n => waitFor(db, name, n + 15)) *>
                IO.blocking(p.destroyForcibly().waitFor()).void
            }
          } *> ticks(db, name).flatMap(n => waitFor(db, name, n + 10))
        }
        byTick <- Fragment
          .const(s"""SELECT split_part(unique_key, ':', 3)::bigint, count(*) FROM ${db.schema("tasks")}
                     WHERE unique_key LIKE 'schedule:$name:%' GROUP BY 1 ORDER BY 1""")
          .query[(Long, Long)]
          .to[Vector]
          .transact(TestDatabase.admin)
        total <- ticks(db, name)
      yield
        assertEquals(byTick.filter(_._2 != 1L), Vector.empty, "ticks enqueued more than once")
        val at = byTick.map(_._1)
        assertEquals(at.zip(at.tail).map((a, b) => b - a).distinct, Vector(every.toMillis), "a tick left out")
        assertEquals(total, byTick.size.toLong)
        assert(total >= 55L, total)
  }
