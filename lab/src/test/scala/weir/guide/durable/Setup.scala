package weir.guide.durable

// docs/durable.md, "Setup": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.{IO, Resource}
import weir.postgres.*

object Setup:
  val config: DatabaseConfig = DatabaseConfig("postgresql://app:secret@db.internal:5432/app")
  // or DatabaseConfig.fromEnv: Option[DatabaseConfig], from WEIR_DATABASE_URL

  // creates the schema or applies its missing migrations: the versions applied, empty when up to date
  val migrate: IO[Vector[Int]] = Database.migrate[IO](config)

  // the pool; checks that the schema is at this library's version, changes nothing
  val database: Resource[IO, Database[IO]] = Database.connect[IO](config)

  // both, for a service that migrates as it starts
  val migrated: Resource[IO, Database[IO]] = Database.migrateAndConnect[IO](config)
