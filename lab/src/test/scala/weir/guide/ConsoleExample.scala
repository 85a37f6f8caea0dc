package weir.guide

// docs/console.md, "Inside your own http4s app": DocSnippetsSuite checks that the page's block is this code,
// verbatim.

import cats.effect.{IO, Resource}
import org.http4s.{HttpApp, HttpRoutes}
import org.http4s.implicits.*
import org.http4s.server.Router
import weir.console.{ConsoleOptions, WeirConsole}
import weir.postgres.Database

object ConsoleExample:
  val options: ConsoleOptions = ConsoleOptions(
    adminToken = sys.env.get("WEIR_CONSOLE_TOKEN"),
    redact = _.replaceAll("\"password\"\\s*:\\s*\"[^\"]*\"", "\"password\": \"***\""),
    pageSize = 50
  )

  // the console under /ops/weir, beside the app's own routes
  def app(db: Database[IO], myRoutes: HttpRoutes[IO]): Resource[IO, HttpApp[IO]] =
    WeirConsole.routes[IO](db, options).map(console =>
      Router("/ops/weir" -> console, "/" -> myRoutes).orNotFound
    )
