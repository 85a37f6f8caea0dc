package weir.console.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import org.http4s.*
import org.http4s.server.middleware.DefaultHead
import weir.Validation
import weir.console.{ConsoleAccess, ConsoleOptions}
import weir.postgres.{Database, QueueOverview, TaskBrowser}

/**
 * The console's routes: its pages ([[PageRoutes]]) and its actions ([[ActionRoutes]]), each answer with
 * the [[SecurityHeaders]], and `HEAD` answered for every `GET` (the GET's status and headers, no body).
 * Every path is relative to where the routes are mounted, and every link a page holds is relative to the
 * page (see [[View]]), so the same routes work at `/` and under any prefix.
 */
private[console] object ConsoleRoutes:

  /**
   * The routes, with the overview's counts shared by every request as [[Snapshot]] says, and access
   * decided by `host` when given, by the console's own login otherwise.
   */
  def resource[F[_]: Async](
      db: Database[F],
      options: ConsoleOptions,
      host: Option[Request[F] => F[ConsoleAccess]]
  ): Resource[F, HttpRoutes[F]] =
    // nothing of `db` is read before the options are checked
    Validation.resource("ConsoleOptions", options.errors ++ hostErrors(options, host.isDefined)).flatMap {
      _ =>
        val overview = QueueOverview(db)
        val browser = TaskBrowser(db)
        Snapshot.resource(overview.counts(options.countCap), options.countsEvery).evalMap {
          allCounts =>
            for
              csrf <- Csrf.random[F]
              answers = new Answers[F](csrf, options.readers)
              gate <- gate(options, host, answers)
              pages = new PageRoutes(db, options, overview, browser, allCounts, answers)
              actions = new ActionRoutes(db, answers)
              // the gate outside DefaultHead, so that a HEAD, tried as a HEAD and then as a GET, asks it once
              guarded = Gate.guard(gate, csrf, answers)(
                DefaultHead.httpRoutes(gate.routes <+> pages.routes <+> actions.routes)
              )
            yield SecurityHeaders(slash(answers) <+> guarded)
        }
    }

  private def hostErrors(options: ConsoleOptions, host: Boolean): List[String] =
    Validation.check(
      !(host && options.adminToken.isDefined),
      "adminToken is for the console's own login: with the host's access function, leave it unset"
    )

  private def gate[F[_]: Async](
      options: ConsoleOptions,
      host: Option[Request[F] => F[ConsoleAccess]],
      answers: Answers[F]
  ): F[Gate[F]] =
    (host, options.adminToken) match
      case (Some(decide), _) => Gate.host(decide).pure[F]
      case (None, None) => Gate.readOnly(answers).pure[F]
      case (None, Some(token)) =>
        (
          Sessions[F](options.sessionLifetime),
          LoginThrottle[F]()
        ).mapN(new TokenLogin(token, options, _, _, answers))

  /** Mounted at /console and asked for /console: the pages' relative links need the trailing slash. */
  private def slash[F[_]: Async](answers: Answers[F]): HttpRoutes[F] =
    HttpRoutes.of[F] {
      case req if req.pathInfo.segments.isEmpty && !req.uri.path.endsWithSlash =>
        answers.redirect(req.uri.path.renderString + "/")
    }

  /** The version of the uPlot WebJar on the class path, from its Maven metadata. */
  lazy val uplotVersion: String =
    val props = new java.util.Properties()
    val in = getClass.getResourceAsStream("/META-INF/maven/org.webjars.npm/uplot/pom.properties")
    if in == null then
      throw new IllegalStateException("the uPlot WebJar (org.webjars.npm:uplot) is not on the class path")
    try props.load(in)
    finally in.close()
    props.getProperty("version")
