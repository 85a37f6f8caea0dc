package weir.cli

import cats.effect.{ExitCode, IO}
import scopt.{OParser, OParserBuilder}
import weir.postgres.{DatabaseConfig, Schema}

/**
 * What every `./weir` command that reaches weir-postgres shares (`durable`, `console`): `--url`, by default
 * `$WEIR_DATABASE_URL`, and `--schema`; and how a run turns them into a database, or into one line on
 * stderr and an exit code.
 */
object DatabaseArgs:

  /** The `--url` and `--schema` options, setting the command's own options through `url` and `schema`. */
  def options[O](builder: OParserBuilder[O])(url: (O, String) => O, schema: (O, String) => O)
      : OParser[String, O] =
    import builder.*
    OParser.sequence(
      opt[String]("url").valueName("URL")
        .action((u, o) => url(o, u))
        .text("postgresql://user:password@host:5432/db or jdbc:postgresql://… (default: $WEIR_DATABASE_URL)"),
      opt[String]("schema").valueName("NAME")
        .validate(s => Schema(s).errors.headOption.map(e => s"--schema: $e").toLeft(()))
        .action((s, o) => schema(o, s))
        .text("the schema that holds weir's tables (default weir)")
    )

  /**
   * Runs `body` on the database `url` (or `$WEIR_DATABASE_URL`) and `schema` name: without either, exit
   * code 2; an error of `body` is printed as one line, exit code 1.
   */
  def run(url: Option[String], schema: String)(body: DatabaseConfig => IO[ExitCode]): IO[ExitCode] =
    url.orElse(sys.env.get("WEIR_DATABASE_URL").filter(_.nonEmpty)) match
      case None =>
        IO.consoleForIO.errorln("Error: no database: give --url or set WEIR_DATABASE_URL").as(ExitCode(2))
      case Some(u) =>
        body(DatabaseConfig(u, schema = Schema(schema))).handleErrorWith(e =>
          IO.consoleForIO.errorln(
            s"Error: ${e.getMessage.stripPrefix("requirement failed: ")}"
          ).as(ExitCode(1))
        )
