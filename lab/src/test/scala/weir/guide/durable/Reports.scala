package weir.guide.durable

// docs/durable.md, "Periodic tasks": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import io.circe.Codec
import weir.Pipeline
import weir.postgres.*

import scala.concurrent.duration.*

final case class Report(kind: String) derives Codec.AsObject

object Reports:
  def run(report: Report, tick: String): IO[Unit] = IO.println(s"the ${report.kind} report of $tick")

  val schedules: Vector[Schedule] = Vector(
    Schedule.cron("nightly-report", "0 3 * * *", queue = "reports", payload = Report("daily")),
    Schedule.cron(
      "monday-digest",
      "30 8 * * MON",
      queue = "reports",
      payload = Report("weekly"),
      zone = java.time.ZoneId.of("Europe/Paris")
    ),
    Schedule.every(
      "refresh-rates",
      10.minutes,
      queue = "reports",
      payload = Report("rates"),
      missed = Schedule.Missed.catchUp(6)
    )
  )

  // the schedules kept going by this process (Resource[IO, Scheduler[IO]]), and a worker of their queue
  def serve(db: Database[IO]): IO[Nothing] =
    val worker = DurableWorker.start[IO, Report, Unit](db, WorkerConfig(queue = "reports")) { source =>
      Pipeline(source).process(job => run(job.payload, job.headers("weir.tick")))
    }
    Scheduler.resource(db, schedules).both(worker).useForever
