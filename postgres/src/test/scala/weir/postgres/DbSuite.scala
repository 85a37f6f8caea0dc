package weir.postgres

import cats.effect.IO
import munit.CatsEffectSuite
import weir.testkit.Eventually

import scala.concurrent.duration.*

/** A suite against the test server: every test must leave no advisory lock and no weir connection behind. */
abstract class DbSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  /** A migrated schema of its own, and a check after the test that nothing was left on the server. */
  def withDb(name: String)(body: Database[IO] => IO[Unit])(using munit.Location): Unit =
    test(name)(TestDatabase.migrated.use(db => body(db).guarantee(TestDatabase.drop(db.schema))) *>
      noLeftovers)

  def noLeftovers: IO[Unit] =
    // a closed pool's sessions may take a moment to leave pg_stat_activity
    Eventually.until(
      "no advisory lock and no weir connection left: (locks, connections) = (0, 0)",
      TestDatabase.leftovers,
      within = 6.seconds,
      every = 100.millis
    )(_ == (0L, 0L)).void
