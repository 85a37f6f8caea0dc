package weir.postgres

import cats.effect.{ExitCode, IO, IOApp}

/**
 * Another process that upgrades the schema, for [[UpgradeSuite]]: runs this release's `Database.migrate`
 * and prints the versions it applied (`applied 10`, or `applied` alone).
 *
 * args: url schema
 */
object MigrateProcess extends IOApp:

  def run(args: List[String]): IO[ExitCode] =
    val List(url, schemaName) = args: @unchecked
    Database
      .migrate[IO](DatabaseConfig(url, schema = Schema(schemaName), poolSize = 1))
      .flatMap(applied => IO.println(s"applied ${applied.mkString(",")}".trim))
      .as(ExitCode.Success)
