package weir.postgres

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*

import scala.io.{Codec, Source as IoSource}

/**
 * weir's schema, as numbered SQL files applied in order (`weir/postgres/migrations/NNNN-*.sql` on the
 * class path). Each file is written for the schema `weir_schema`, which is replaced by the schema's name.
 *
 * Apply them with [[Database.migrate]] (or `./weir durable migrate`): the one way to migrate. It applies
 * what is missing in one transaction under a transaction-scoped advisory lock, so two workers starting at
 * once apply each migration exactly once (the second waits, then finds nothing to do) and no lock outlives
 * the transaction. A worker checks at start that the schema is at this library's version, and fails with
 * [[SchemaError]] naming the schema and the versions otherwise. [[all]] lists the SQL, for a user whose own
 * migration tool must apply it.
 */
object Migrations:

  /** One migration: its version, name and SQL (for the default schema name). */
  final case class Migration(version: Int, name: String, sql: String)

  /** Every migration this library knows, in order. */
  lazy val all: Vector[Migration] =
    Vector(
      "0001-tasks",
      "0002-claim-path",
      "0003-worker-sessions",
      "0004-claim-function",
      "0005-task-headers",
      "0006-queue-controls",
      "0007-schedules",
      "0008-cancel-running",
      "0009-console-indexes"
    ).map { file =>
      val path = s"weir/postgres/migrations/$file.sql"
      val stream = Option(getClass.getClassLoader.getResourceAsStream(path))
        .getOrElse(throw new IllegalStateException(s"migration $path is missing from the class path"))
      val text =
        try IoSource.fromInputStream(stream)(using Codec.UTF8).mkString
        finally stream.close()
      Migration(file.takeWhile(_ != '-').toInt, file.dropWhile(_ != '-').drop(1), text)
    }

  /** The version this library needs. */
  def latest: Int = all.last.version

  /** Applies every missing migration to `schema`; returns the versions applied (empty when up to date). */
  private[postgres] def migrate(schema: Schema): ConnectionIO[Vector[Int]] = migrateTo(schema, latest)

  /** Applies the missing migrations up to `version` only: a schema as an earlier release left it. */
  private[postgres] def migrateTo(schema: Schema, version: Int): ConnectionIO[Vector[Int]] =
    for
      // the lock key: a hash of the schema's name, in the namespace of weir's migrations
      _ <- sql"SELECT pg_advisory_xact_lock(${schema.key("migrate")})".query[Unit].unique
      _ <- Fragment.const(s"CREATE SCHEMA IF NOT EXISTS ${schema.name}").update.run
      _ <- Fragment
        .const(
          s"CREATE TABLE IF NOT EXISTS ${schema("migrations")} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        .update
        .run
      done <- Fragment.const(s"SELECT version FROM ${schema("migrations")}").query[Int].to[Set]
      _ <- tooNew(schema, done)
      missing = all.filter(m => m.version <= version && !done(m.version))
      _ <- missing.traverse_ { m =>
        Fragment.const(m.sql.replace("weir_schema", schema.name)).update.run *>
          (Fragment.const(s"INSERT INTO ${schema("migrations")} (version, name) VALUES (") ++
            fr0"${m.version}, ${m.name})").update.run
      }
    yield missing.map(_.version)

  /**
   * Fails with [[SchemaError]] unless `schema` exists and is exactly at [[latest]]: a worker never runs
   * against a schema it does not know.
   */
  private[postgres] def check(schema: Schema): ConnectionIO[Unit] =
    for
      exists <- sql"SELECT to_regclass(${schema("migrations")}) IS NOT NULL".query[Boolean].unique
      _ <-
        if !exists then
          FC.raiseError[Unit](
            SchemaError(
              s"schema '${schema.name}' has no weir tables: run migrate first (library or `./weir durable migrate`)"
            )
          )
        else
          Fragment.const(s"SELECT version FROM ${schema("migrations")}").query[Int].to[Set].flatMap { done =>
            tooNew(schema, done) *> {
              val missing = all.map(_.version).filterNot(done)
              if missing.isEmpty then FC.unit
              else
                FC.raiseError[Unit](
                  SchemaError(
                    s"schema '${schema.name}' is at version ${
                        if done.isEmpty then 0 else done.max
                      }, this weir needs $latest: run migrate"
                  )
                )
            }
          }
    yield ()

  private def tooNew(schema: Schema, done: Set[Int]): ConnectionIO[Unit] =
    val unknown = done.filter(_ > latest)
    if unknown.isEmpty then FC.unit
    else
      FC.raiseError(
        SchemaError(
          s"schema '${schema.name}' is at version ${unknown.max}, newer than this weir knows ($latest): upgrade weir"
        )
      )

/** The database's schema is missing, too old or too new for this library. */
final class SchemaError(message: String) extends RuntimeException(message)
