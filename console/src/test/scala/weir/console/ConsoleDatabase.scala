package weir.console

import cats.effect.{IO, Resource}
import weir.postgres.Database
import weir.testkit.postgres.TestDatabase

/**
 * The schemas the console's suites read: weir-testkit-postgres's, on `WEIR_TEST_DATABASE_URL` or an
 * embedded PostgreSQL started once per test JVM. Each test gets a migrated schema of its own, dropped after
 * it.
 */
object ConsoleDatabase:

  /** A migrated schema of its own with the rows of [[Planted]], dropped on release. */
  def planted: Resource[IO, (Database[IO], Planted)] = empty.evalMap(db => Planted.plant(db).map(db -> _))

  /** A migrated schema of its own, without rows, dropped on release. */
  def empty: Resource[IO, Database[IO]] = TestDatabase.resource[IO]()
