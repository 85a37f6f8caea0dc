package weir.guide

// docs/console.md, "Your app decides": the console mounted in an app that decides who reads and who acts.
// Every scala block of the docs must appear verbatim in a file of this package.

import cats.effect.{IO, Resource}
import org.http4s.{HttpApp, HttpRoutes, Request}
import org.http4s.server.Router
import weir.console.{ConsoleAccess, ConsoleOptions, ReaderView, WeirConsole}
import weir.postgres.Database

/** A signed-in user of your app, as its own authentication finds them. */
final case class StaffMember(name: String, sessionNumber: Long, onCall: Boolean)

def opsApp(
    db: Database[IO],
    signedIn: Request[IO] => IO[Option[StaffMember]],
    appRoutes: HttpRoutes[IO]
): Resource[IO, HttpApp[IO]] =
  val access: Request[IO] => IO[ConsoleAccess] = request =>
    signedIn(request).map {
      case Some(staff) if staff.onCall => ConsoleAccess.Act(staff.name, Some(s"#${staff.sessionNumber}"))
      case Some(staff) => ConsoleAccess.Read(staff.name)
      case None => ConsoleAccess.Denied
    }
  WeirConsole.routes[IO](db, ConsoleOptions(readers = ReaderView.Summary), access)
    .map(console => Router("/ops/weir" -> console, "/" -> appRoutes).orNotFound)
