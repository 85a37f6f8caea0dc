package weir.console

import cats.effect.kernel.{Async, Resource}
import com.comcast.ip4s.{Host, Port}
import fs2.io.net.Network
import org.http4s.{HttpRoutes, Request}
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
 * app of your own, with your app's access decisions or the console's own login, under any prefix: `WeirConsole.routes(db, options).map(console => Router("/ops/weir" -> console))`. Every link
 * is relative, so the pages work wherever they are mounted; the same pages either way.
 */
object WeirConsole:

  /**
   * The console's routes, with its own access: read-only for everyone without `options.adminToken`;
   * with it, readers who log in with the token act. Reads run on `db`'s pool, one short transaction each;
   * only POSTs act, and only for an operator whose form carries their CSRF token. A resource because the
   * overview's counts are read in the background, shared by every request (`options.countsEvery`), and
   * logged-in sessions are kept by it; releasing it cancels a reading under way and ends every session. Bad
   * `options` fail it, before any query, with one [[weir.InvalidSettings]] naming every bad value
   * ([[ConsoleOptions.errors]]).
   */
  def routes[F[_]: Async](db: Database[F], options: ConsoleOptions): Resource[F, HttpRoutes[F]] =
    ConsoleRoutes.resource[F](db, options, None)

  /**
   * The console's routes, with access decided by the host app: `access` is asked once per request (but not
   * for the style sheet, script and chart library, which are the same for everyone) and says what it may do
   * and who asks ([[ConsoleAccess]]); it typically reads the host's own session. The console adds nothing to
   * it but the CSRF token its forms carry, bound to the operator (see docs/console.md). An error `access`
   * raises fails the request (500); an operator who acts without a name, or a name or session over
   * [[ConsoleAccess.maxName]] characters, answers 500 naming it. `options.adminToken` must be unset: the
   * console's own login is not served. Otherwise as the other `routes`.
   */
  def routes[F[_]: Async](
      db: Database[F],
      options: ConsoleOptions,
      access: Request[F] => F[ConsoleAccess]
  ): Resource[F, HttpRoutes[F]] =
    ConsoleRoutes.resource[F](db, options, Some(access))

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
