package weir.console.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import io.circe.Json
import org.http4s.*
import org.http4s.dsl.Http4sDsl
import org.http4s.headers.`Content-Type`
import weir.console.ConsoleOptions
import weir.postgres.{
  AuditLog, BatchId, Database, QueueCounts, QueueOverview, TaskAdmin, TaskBrowser, UnknownBatch,
  UnknownWorkflow,
  WorkflowId
}

import java.time.Instant
import java.time.temporal.ChronoUnit
import scala.concurrent.duration.*

/**
 * The console's pages, fragments, series and assets: GETs only, each one or a few short reads, none of
 * which changes anything.
 */
private[console] final class PageRoutes[F[_]](
    db: Database[F],
    options: ConsoleOptions,
    overview: QueueOverview[F],
    browser: TaskBrowser[F],
    allCounts: Snapshot[F, Vector[QueueCounts]],
    answers: Answers[F]
)(using F: Async[F])
    extends Http4sDsl[F]:
  import answers.{*, given}

  private val admin = TaskAdmin(db)
  private val keysShown = 200
  private val neighboursShown = 5

  /**
   * A queue's counts, read for this request (the page an operator acts on shows what the action changed),
   * and its controls; or `None` when no such queue is known.
   */
  private def queueView(name: String): F[Option[(QueueView, Instant)]] =
    F.both(
      (F.realTimeInstant, overview.counts(options.countCap, Some(name))).tupled,
      admin.overview.queues
    )
      .map { case ((at, counts), infos) => QueueView.all(counts, infos).find(_.name == name).map(_ -> at) }

  /**
   * Every queue with its counts, as last read for all requests ([[Snapshot]]), and its controls, read for
   * this one (a queue paused a moment ago shows paused).
   */
  private def queues: F[(Vector[QueueView], Instant)] =
    F.both(allCounts.get, admin.overview.queues).map((counts, infos) =>
      (QueueView.all(counts.value, infos), counts.at)
    )

  private def throughput(queue: Option[String]): F[Json] =
    (overview.throughput(queue), F.realTimeInstant).mapN { (minutes, now) =>
      val last = now.truncatedTo(ChronoUnit.MINUTES)
      val slots = (59 to 0 by -1).map(i => last.minus(i.toLong, ChronoUnit.MINUTES))
      val byMinute = minutes.map(m => m.at -> m).toMap
      Json.obj(
        "t" -> Json.fromValues(slots.map(s => Json.fromLong(s.getEpochSecond))),
        "completed" -> Json.fromValues(slots.map(s => Json.fromLong(byMinute.get(s).fold(0L)(_.completed)))),
        "dead" -> Json.fromValues(slots.map(s => Json.fromLong(byMinute.get(s).fold(0L)(_.dead))))
      )
    }

  private def asset(req: Request[F], resource: String): F[Response[F]] =
    StaticFile.fromResource[F](resource, Some(req))
      .map(_.putHeaders(headers.`Cache-Control`(CacheDirective.`max-age`(1.hour))))
      .getOrElseF(notFound(req, "No such asset."))

  val routes: HttpRoutes[F] = HttpRoutes.of[F] {
    case req @ GET -> Root =>
      (view(req), queues).flatMapN((v, qs) => Ok(QueuePages.overview(v, qs._1, qs._2)))
    case req @ GET -> Root / "fragments" / "queues" =>
      (view(req), queues).flatMapN((v, qs) => Ok(QueuePages.table(v, qs._1, qs._2)))
    case req @ GET -> Root / "api" / "throughput" =>
      val queue = req.params.get("queue").filter(_.nonEmpty)
      throughput(queue).flatMap(json => Ok(json.noSpaces, `Content-Type`(MediaType.application.json)))

    case req @ GET -> Root / "queues" / name =>
      (view(req), queueView(name)).flatMapN {
        case (v, Some((q, at))) => Ok(QueuePages.queue(v, q, at, req.params.get("done")))
        case (_, None) => notFound(req, s"No queue '$name'.")
      }

    case req @ GET -> Root / "tasks" =>
      view(req).flatMap { v =>
        TaskFilter.parse(req.params)
          .filterOrElse(
            f => options.payloadSearch || f.text.isEmpty,
            "searching payload text is turned off for this console"
          )
          .filterOrElse(f => v.details || f.text.isEmpty, "searching payload text is not open to readers")
          .fold(
            badRequest(req, _),
            f =>
              browser.tasks(f, options.pageSize, options.scanLimit).flatMap(page =>
                Ok(TaskPages.list(v, f, page, options.redact, options.payloadSearch))
              )
          )
      }
    case req @ GET -> Root / "tasks" / idText =>
      idText match
        case TaskId(id) =>
          browser.view(id, neighboursShown, TaskPages.auditShown).flatMap {
            case None => notFound(req, s"No task $id.")
            case Some(t) =>
              view(req).flatMap(v =>
                Ok(TaskPages.task(v, t.task, t.neighbours, options.redact, req.params.get("done"), t.actions))
              )
          }
        case _ => badRequest(req, s"malformed task id: '$idText'")

    case req @ GET -> Root / "workflows" / idText =>
      idText match
        case TaskId(id) =>
          browser.workflow(WorkflowId(id), GroupPages.tasksShown).attempt.flatMap {
            case Right(w) => view(req).flatMap(v => Ok(GroupPages.workflow(v, w, req.params.get("done"))))
            case Left(_: UnknownWorkflow) => notFound(req, s"No workflow $id.")
            case Left(e) => F.raiseError(e)
          }
        case _ => badRequest(req, s"malformed workflow id: '$idText'")
    case req @ GET -> Root / "batches" / idText =>
      val after = req.params.get("after").filter(_.nonEmpty)
      (idText, after.traverse(a => a.toLongOption.filter(_ >= 0).toRight(a))) match
        case (TaskId(id), Right(from)) =>
          browser.batch(BatchId(id), from.getOrElse(0L), GroupPages.membersShown).attempt.flatMap {
            case Right(b) =>
              view(req).flatMap(v => Ok(GroupPages.batch(v, b, from.getOrElse(0L), req.params.get("done"))))
            case Left(_: UnknownBatch) => notFound(req, s"No batch $id.")
            case Left(e) => F.raiseError(e)
          }
        case (TaskId(_), Left(bad)) => badRequest(req, s"malformed after: '$bad' (a task id, or 0)")
        case _ => badRequest(req, s"malformed batch id: '$idText'")

    case req @ GET -> Root / "keys" =>
      (view(req), browser.keys(keysShown, options.countCap)).flatMapN((v, ks) =>
        Ok(OtherPages.keys(v, ks, keysShown))
      )
    case req @ GET -> Root / "workers" =>
      (view(req), admin.overview.workers).flatMapN((v, ws) => Ok(OtherPages.workers(v, ws)))
    case req @ GET -> Root / "schedules" =>
      (view(req), admin.overview.schedules).flatMapN((v, ss) => Ok(OtherPages.schedules(v, ss)))

    case req @ GET -> Root / "audit" =>
      AuditPages.parse(req.params).fold(
        badRequest(req, _),
        f =>
          (view(req), AuditLog(db).entries(f, options.pageSize)).flatMapN((v, entries) =>
            Ok(AuditPages.list(v, f, entries, full = entries.size == options.pageSize))
          )
      )

    case req @ GET -> Root / "assets" / ("console.css" | "console.js") =>
      asset(req, s"/weir/console/${req.pathInfo.segments.last.decoded()}")
    case req @ GET -> Root / "assets" / "uplot" / (file @ ("uPlot.min.css" | "uPlot.iife.min.js")) =>
      asset(req, s"/META-INF/resources/webjars/uplot/${ConsoleRoutes.uplotVersion}/dist/$file")
  }
