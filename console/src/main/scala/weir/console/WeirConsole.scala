package weir.console

import cats.effect.kernel.{Async, Resource}
import com.comcast.ip4s.{Host, Port}
import fs2.io.net.Network
import org.http4s.HttpRoutes
import org.http4s.ember.server.EmberServerBuilder
import org.http4s.server.Server
import weir.console.internal.{ConsoleRoutes, SecurityHeaders}
import weir.postgres.Database

/**
 * A web console for the durable queues of `db`'s schema: server-rendered pages of the queues, tasks,
 * keys, workers and schedules, and the operator's actions (pause, resume, limits, retry, cancel,
 * discard), which go through [[weir.postgres.TaskAdmin]].
 *
 * Serve it on its own with [[server]] (what `./weir console` does), or mount [[routes]] in an http4s
 * app of your own, under any prefix: `WeirConsole.routes(db, options).map(console => Router("/ops/weir" -> console))`. Every link
 * is relative, so the pages work wherever they are mounted; the same pages either way.
 */
object WeirConsole:

  /**
   * The console's routes. Reads run on `db`'s pool, one short transaction each; only POSTs act, and only
   * for an operator logged in with `options.adminToken` whose form carries the session's CSRF token. A
   * resource because the overview's counts are read in the background, shared by every request
   * (`options.countsEvery`); releasing it cancels a reading under way. Bad `options` fail it, before any
   * query, with one [[weir.InvalidSettings]] naming every bad value ([[ConsoleOptions.errors]]).
   */
  def routes[F[_]: Async](db: Database[F], options: ConsoleOptions): Resource[F, HttpRoutes[F]] =
    ConsoleRoutes.resource[F](db, options, None)

  /**
   * An HTTP server of the console alone, on `host:port` (port 0: any free port; the server's
   * `address` says which). Bind to a loopback address unless other hosts must reach it. Fails as
   * [[routes]] does for bad `options`.
   */
  def server[F[_]: Async](
      db: Database[F],
      options: ConsoleOptions,
      host: Host,
      port: Port
  ): Resource[F, Server] =
    given Network[F] = Network.forAsync[F]
    routes(db, options).flatMap(console =>
      EmberServerBuilder.default[F].withHost(host).withPort(port).withHttpApp(SecurityHeaders(
        console.orNotFound
      )).build
    )
