package weir.console.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import doobie.implicits.*
import io.circe.Json
import org.http4s.*
import org.http4s.dsl.Http4sDsl
import org.http4s.headers.{`Content-Type`, Location}
import weir.Validation
import weir.console.ConsoleOptions
import weir.console.internal.ConsoleQueries.QueueCounts
import weir.postgres.{Cancel, Database, QueueRate, TaskAdmin, UnknownQueue}

import java.time.Instant
import java.time.temporal.ChronoUnit
import scala.concurrent.duration.*

/**
 * The console's routes. Every path is relative to where the routes are mounted, and every link a page
 * holds is relative to the page (see [[View]]), so the same routes work at `/` and under any prefix.
 * GETs only read; every POST is an action, refused unless the operator is logged in with the admin token
 * and the form carries the session's CSRF token (see [[Access]]).
 */
private[console] final class ConsoleRoutes[F[_]] private (
    db: Database[F],
    options: ConsoleOptions,
    queries: ConsoleQueries,
    allCounts: Snapshot[F, Vector[QueueCounts]]
)(using F: Async[F])
    extends Http4sDsl[F]:

  private val admin = TaskAdmin(db)
  private val access = options.adminToken.map(new Access(_))
  private val keysShown = 200
  private val neighboursShown = 5

  private given EntityEncoder[F, Html] =
    EntityEncoder.stringEncoder[F].contramap[Html](_.render)
      .withContentType(`Content-Type`(MediaType.text.html, Charset.`UTF-8`))

  private def read[A](io: doobie.ConnectionIO[A]): F[A] = io.transact(db.transactor)

  /** The session's nonce, when the request carries a valid session cookie. */
  private def session(req: Request[F]): Option[String] =
    access.flatMap(a => req.cookies.find(_.name == Access.cookie).flatMap(c => a.session(c.content)))

  private def view(req: Request[F]): F[View] =
    F.realTimeInstant.map { now =>
      // "/a/b" is two levels down: its links climb one level to reach the root
      val depth = req.pathInfo.renderString.count(_ == '/') - 1
      val root = if depth <= 0 then "./" else "../" * depth
      View(root, access.isDefined, session(req).flatMap(n => access.map(_.csrf(n))), now)
    }

  private def redirect(to: String): F[Response[F]] =
    SeeOther().map(_.putHeaders(Location(Uri.unsafeFromString(to))))

  private def problem(req: Request[F], status: Status, title: String, detail: String): F[Response[F]] =
    view(req).map(v => Response[F](status).withEntity(OtherPages.problem(v, title, detail)))

  private def badRequest(req: Request[F], detail: String) =
    problem(req, Status.BadRequest, "Bad request", detail)
  private def notFound(req: Request[F], detail: String) = problem(req, Status.NotFound, "Not found", detail)
  private def conflict(req: Request[F], detail: String) =
    problem(req, Status.Conflict, "Nothing changed", detail)

  /**
   * Runs the action `body` only for a logged-in operator whose form carries the session's CSRF token;
   * anything else is a 403 and changes nothing.
   */
  private def act(req: Request[F])(body: UrlForm => F[Response[F]]): F[Response[F]] =
    def forbidden(detail: String) = problem(req, Status.Forbidden, "Forbidden", s"$detail Nothing changed.")
    access match
      case None => forbidden("This console is read-only: it was started without an admin token.")
      case Some(a) =>
        req.as[UrlForm].flatMap { form =>
          session(req) match
            case None => forbidden("Log in with the admin token to act.")
            case Some(nonce) if !form.getFirst("csrf").exists(a.validCsrf(nonce, _)) =>
              forbidden("The form's CSRF token is missing or wrong: reload the page and try again.")
            case Some(_) => body(form)
        }

  /**
   * A queue's counts, read for this request (the page an operator acts on shows what the action changed),
   * and its controls; or `None` when no such queue is known.
   */
  private def queueView(name: String): F[Option[(QueueView, Instant)]] =
    F.both(
      (F.realTimeInstant, ConsoleRoutes.counts(db, queries, options.countCap, Some(name))).tupled,
      admin.queues
    )
      .map { case ((at, counts), infos) => QueueView.all(counts, infos).find(_.name == name).map(_ -> at) }

  /**
   * Every queue with its counts, as last read for all requests ([[Snapshot]]), and its controls, read for
   * this one (a queue paused a moment ago shows paused).
   */
  private def queues: F[(Vector[QueueView], Instant)] =
    F.both(allCounts.get, admin.queues).map((counts, infos) =>
      (QueueView.all(counts.value, infos), counts.at)
    )

  private def throughput(queue: Option[String]): F[Json] =
    (read(queries.throughput(queue)), F.realTimeInstant).mapN { (minutes, now) =>
      val last = now.truncatedTo(ChronoUnit.MINUTES)
      val slots = (59 to 0 by -1).map(i => last.minus(i.toLong, ChronoUnit.MINUTES))
      val byMinute = minutes.map(m => m.at -> m).toMap
      Json.obj(
        "t" -> Json.fromValues(slots.map(s => Json.fromLong(s.getEpochSecond))),
        "completed" -> Json.fromValues(slots.map(s => Json.fromLong(byMinute.get(s).fold(0L)(_.completed)))),
        "dead" -> Json.fromValues(slots.map(s => Json.fromLong(byMinute.get(s).fold(0L)(_.dead))))
      )
    }

  private object TaskId:
    def unapply(s: String): Option[Long] = s.toLongOption.filter(_ > 0)

  private def queueNotice(req: Request[F]): Option[String] = req.params.get("done")

  private def limits(req: Request[F], queue: String, form: UrlForm): F[Response[F]] =
    def field(name: String) = form.getFirst(name).map(_.trim).filter(_.nonEmpty)
    val parsed: Either[String, (Option[Int], Option[QueueRate])] =
      for
        max <- field("max_running").traverse(v =>
          v.toIntOption.filter(_ > 0).toRight(s"max_running must be a whole number > 0, was: '$v'")
        )
        perSecond <- field("rate").traverse(v =>
          v.toDoubleOption.filter(r => r > 0 && !r.isInfinite).toRight(
            s"rate must be a number > 0, was: '$v'"
          )
        )
        burst <- field("burst").traverse(v =>
          v.toIntOption.filter(_ > 0).toRight(s"burst must be a whole number > 0, was: '$v'")
        )
        _ <- Either.cond(burst.isEmpty || perSecond.isDefined, (), "burst needs a rate")
      yield (max, perSecond.map(r => QueueRate(r, burst.getOrElse(math.ceil(r).toInt.max(1)))))
    parsed.fold(
      badRequest(req, _),
      (max, rate) =>
        control(req, queue)(admin.limits(queue, max, rate), "limits set")
    )

  private def control(req: Request[F], queue: String)(change: F[Unit], done: String): F[Response[F]] =
    change.attempt.flatMap {
      case Right(()) => redirect(s"../${Layout.encode(queue)}?done=${Layout.encode(done)}")
      case Left(_: UnknownQueue) => notFound(req, s"No queue '$queue'.")
      case Left(e) => F.raiseError(e)
    }

  /** `action` on each of `ids`, in one transaction; each one's outcome, in their order. */
  private def perform(ids: Vector[Long], action: TaskAction): F[Vector[ActionOutcome]] =
    // retry and discard answer false for a missing task and for one they do not apply to: the row says which
    def finishedOnly(id: Long, ok: Boolean, done: String, verb: String): F[ActionOutcome] =
      if ok then F.pure(ActionOutcome.Done(done))
      else
        read(queries.task(id)).map {
          case None => ActionOutcome.NotFound
          case Some(t) if t.state == "dead" || t.state == "cancelled" =>
            ActionOutcome.Refused(s"task $id's unique key is held by a task that has not finished")
          case Some(t) =>
            ActionOutcome.Refused(s"task $id is ${t.state}: only a dead or cancelled task can be $verb")
        }
    action match
      case TaskAction.Retry =>
        admin.retryMany(ids).flatMap(_.zip(ids).traverse((ok, id) =>
          finishedOnly(id, ok, "put back to run", "retried")
        ))
      case TaskAction.Discard =>
        admin.discardMany(ids).flatMap(_.zip(ids).traverse((ok, id) =>
          finishedOnly(id, ok, "discarded", "discarded")
        ))
      case TaskAction.Cancel =>
        admin.cancelMany(ids).map(_.zip(ids).map {
          case (Cancel.Cancelled, _) => ActionOutcome.Done("cancelled")
          case (Cancel.Requested, _) => ActionOutcome.Done("cancel requested: its worker interrupts it")
          case (Cancel.Finished(state), id) =>
            ActionOutcome.Refused(s"task $id has already finished (${state.name})")
          case (Cancel.NotFound, _) => ActionOutcome.NotFound
        })

  private def asset(req: Request[F], resource: String): F[Response[F]] =
    StaticFile.fromResource[F](resource, Some(req))
      .map(_.putHeaders(headers.`Cache-Control`(CacheDirective.`max-age`(1.hour))))
      .getOrElseF(notFound(req, "No such asset."))

  val routes: HttpRoutes[F] = HttpRoutes.of[F] {
    // mounted at /console and asked for /console: the page's relative links need the trailing slash
    case req if req.pathInfo.segments.isEmpty && !req.uri.path.endsWithSlash =>
      redirect(req.uri.path.renderString + "/")

    case req @ GET -> Root =>
      (view(req), queues).flatMapN((v, qs) => Ok(QueuePages.overview(v, qs._1, qs._2)))
    case req @ GET -> Root / "fragments" / "queues" =>
      (view(req), queues).flatMapN((v, qs) => Ok(QueuePages.table(v, qs._1, qs._2)))
    case req @ GET -> Root / "api" / "throughput" =>
      val queue = req.params.get("queue").filter(_.nonEmpty)
      throughput(queue).flatMap(json => Ok(json.noSpaces, `Content-Type`(MediaType.application.json)))

    case req @ GET -> Root / "queues" / name =>
      (view(req), queueView(name)).flatMapN {
        case (v, Some((q, at))) => Ok(QueuePages.queue(v, q, at, queueNotice(req)))
        case (_, None) => notFound(req, s"No queue '$name'.")
      }
    case req @ POST -> Root / "queues" / name / "pause" =>
      act(req)(_ => control(req, name)(admin.pause(name), "paused"))
    case req @ POST -> Root / "queues" / name / "resume" =>
      act(req)(_ => control(req, name)(admin.resume(name), "resumed"))
    case req @ POST -> Root / "queues" / name / "limit" => act(req)(limits(req, name, _))

    case req @ GET -> Root / "tasks" =>
      TaskFilter.parse(req.params).filterOrElse(
        f => options.payloadSearch || f.text.isEmpty,
        "searching payload text is turned off for this console"
      ).fold(
        badRequest(req, _),
        f =>
          (view(req), read(queries.taskPage(f, options.pageSize, options.scanLimit))).flatMapN { (v, page) =>
            Ok(TaskPages.list(v, f, page, options.redact, options.payloadSearch))
          }
      )
    case req @ POST -> Root / "tasks" / "actions" =>
      act(req) { form =>
        val named = form.getFirst("action").getOrElse("")
        val ids = form.get("id").toVector
        TaskAction.parse(named) match
          case None => badRequest(req, s"unknown action '$named' (retry, cancel or discard)")
          case Some(_) if ids.isEmpty => badRequest(req, "select at least one task")
          case Some(action) =>
            ids.traverse(s => TaskId.unapply(s).toRight(s)) match
              case Left(bad) => badRequest(req, s"malformed task id: '$bad'")
              case Right(parsed) =>
                val distinct = parsed.distinct
                perform(distinct, action).map(_.zip(distinct).map {
                  case (ActionOutcome.Done(what), id) => id -> what
                  case (ActionOutcome.NotFound, id) => id -> s"no task $id"
                  case (ActionOutcome.Refused(why), id) => id -> why
                }).flatMap(outcomes => view(req).flatMap(v => Ok(TaskPages.batchResult(v, named, outcomes))))
      }
    case req @ GET -> Root / "tasks" / idText =>
      idText match
        case TaskId(id) =>
          read(queries.task(id)).flatMap {
            case None => notFound(req, s"No task $id.")
            case Some(t) =>
              val around = t.key.fold(F.pure((Vector.empty, Vector.empty)))(k =>
                read(queries.neighbours(t.queue, k, t.id, neighboursShown))
              )
              (view(req), around).flatMapN((v, n) =>
                Ok(TaskPages.task(v, t, n, options.redact, req.params.get("done")))
              )
          }
        case _ => badRequest(req, s"malformed task id: '$idText'")
    case req @ POST -> Root / "tasks" / idText / TaskAction(action) =>
      act(req) { _ =>
        idText match
          case TaskId(id) =>
            perform(Vector(id), action).map(_.head).flatMap {
              case ActionOutcome.Done(what) => redirect(s"../$id?done=${Layout.encode(what)}")
              case ActionOutcome.NotFound => notFound(req, s"No task $id.")
              case ActionOutcome.Refused(why) => conflict(req, why)
            }
          case _ => badRequest(req, s"malformed task id: '$idText'")
      }

    case req @ GET -> Root / "keys" =>
      (view(req), read(queries.keys(keysShown, options.countCap))).flatMapN((v, ks) =>
        Ok(OtherPages.keys(v, ks, keysShown, options.countCap))
      )
    case req @ GET -> Root / "workers" =>
      (view(req), admin.workers).flatMapN((v, ws) => Ok(OtherPages.workers(v, ws)))
    case req @ GET -> Root / "schedules" =>
      (view(req), admin.schedules).flatMapN((v, ss) => Ok(OtherPages.schedules(v, ss)))

    case req @ GET -> Root / "login" => view(req).flatMap(v => Ok(OtherPages.login(v, None)))
    case req @ POST -> Root / "login" =>
      access match
        case None => problem(
            req,
            Status.Forbidden,
            "Forbidden",
            "This console is read-only: there is nothing to log in to."
          )
        case Some(a) =>
          req.as[UrlForm].flatMap { form =>
            if form.getFirst("token").exists(a.isToken) then
              redirect("./").map(_.addCookie(ResponseCookie(
                Access.cookie,
                a.newSession(),
                httpOnly = true,
                sameSite = Some(SameSite.Strict)
              )))
            else
              view(req).map(v =>
                Response[F](Status.Forbidden).withEntity(OtherPages.login(v, Some("Wrong token.")))
              )
          }
    case req @ POST -> Root / "logout" => act(req)(_ => redirect("./").map(_.removeCookie(Access.cookie)))

    case req @ GET -> Root / "assets" / ("console.css" | "console.js") =>
      asset(req, s"/weir/console/${req.pathInfo.segments.last.decoded()}")
    case req @ GET -> Root / "assets" / "uplot" / (file @ ("uPlot.min.css" | "uPlot.iife.min.js")) =>
      asset(req, s"/META-INF/resources/webjars/uplot/${ConsoleRoutes.uplotVersion}/dist/$file")
  }

private[console] object ConsoleRoutes:

  /** The routes, with the overview's counts shared by every request as [[Snapshot]] says. */
  def resource[F[_]: Async](db: Database[F], options: ConsoleOptions): Resource[F, ConsoleRoutes[F]] =
    // nothing of `db` is read before the options are checked
    Validation.resource("ConsoleOptions", options.errors).flatMap { _ =>
      val queries = new ConsoleQueries(db.schema)
      Snapshot.resource(counts(db, queries, options.countCap, None), options.countsEvery)
        .map(new ConsoleRoutes(db, options, queries, _))
    }

  /**
   * The counts of every queue (or `only` that one): the live ones and the finished ones in two reads, each
   * on a connection of its own, at once.
   */
  private def counts[F[_]](db: Database[F], queries: ConsoleQueries, cap: Int, only: Option[String])(using
      F: Async[F]
  ): F[Vector[QueueCounts]] =
    F.both(
      queries.liveCounts(only).transact(db.transactor),
      queries.finishedCounts(cap, only).transact(db.transactor)
    ).map((live, finished) => QueueCounts.of(live, finished, cap))

  /** The version of the uPlot WebJar on the class path, from its Maven metadata. */
  lazy val uplotVersion: String =
    val props = new java.util.Properties()
    val in = getClass.getResourceAsStream("/META-INF/maven/org.webjars.npm/uplot/pom.properties")
    if in == null then
      throw new IllegalStateException("the uPlot WebJar (org.webjars.npm:uplot) is not on the class path")
    try props.load(in)
    finally in.close()
    props.getProperty("version")
