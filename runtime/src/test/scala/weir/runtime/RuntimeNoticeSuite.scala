package weir.runtime

import cats.effect.IO
import cats.effect.unsafe.{IORuntime, IORuntimeConfig}
import munit.CatsEffectSuite
import weir.testing.RecordedLogs

/** The runtime's one notice goes to the user's logger when one is given. */
class RuntimeNoticeSuite extends CatsEffectSuite:

  test("given a LoggerFactory, the runtime's notice is logged at WARN on weir.runtime, not printed") {
    for
      logs <- RecordedLogs()
      fallback = (notice: String => Unit) =>
        notice("weir-runtime: a notice")
        IORuntime.createDefaultPollingSystem()
      _ <- WeirRuntime.logged(IORuntimeConfig(), logs, fallback).use(runtime =>
        IO.blocking(IO.pure(21).map(_ * 2).unsafeRunSync()(using runtime)).assertEquals(42)
      )
      lines <- logs.lines
    yield assertEquals(
      lines.map(l => (l.level, l.logger, l.message)),
      Vector(("WARN", "weir.runtime", "weir-runtime: a notice"))
    )
  }

  test("on the Cats Effect release weir's polling system was written against, nothing is logged") {
    for
      logs <- RecordedLogs()
      _ <- WeirRuntime.resource(IORuntimeConfig(), logs).use_
      lines <- logs.lines
    yield assertEquals(lines, Vector.empty)
  }
