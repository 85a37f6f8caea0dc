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
 * the transaction. [[all]] lists the SQL, for a user whose own migration tool must apply it: that tool must
 * also write each migration's row of `migrations` (`version`, `name`, and from version 10 on
 * `compatible_with_previous` from [[Migration.compatibleWithPrevious]]), since `connect` reads the schema's
 * version there, and takes a newer migration whose row does not say for an incompatible one.
 *
 * Each file's first line says whether workers of the releases before it keep working once it is applied
 * (`-- weir: compatible-with-previous: yes` or `no`, the reasons on the comment lines that follow), and
 * `migrate` records the answer beside the version in the schema's `migrations` table (from migration 10 on).
 * A worker checks at start that the schema is at this library's version, or newer with every migration
 * beyond it recorded as compatible, and fails with [[SchemaError]] naming the schema and the versions
 * otherwise: so a process of an earlier release decides from the database alone, without the newer files.
 */
object Migrations:

  /**
   * One migration: its version, name and SQL (for the default schema name), and whether workers of the
   * releases before it keep working against the schema once it is applied: every release that accepted the
   * schema before it, not only the one just before, so that "every migration beyond mine is compatible" is
   * enough for a release to run on a newer schema.
   */
  final case class Migration(version: Int, name: String, sql: String, compatibleWithPrevious: Boolean)

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
      "0009-console-indexes",
      "0010-migration-compatibility",
      "0011-audit",
      "0012-workflows",
      "0013-batches",
      "0014-workflow-identity",
      "0015-settle-per-statement",
      "0016-cheaper-settle",
      "0017-workflow-index-without-running",
      "0018-claim-from-waiting",
      "0019-one-parent-without-edges",
      "0020-dependents-by-their-index"
    ).map { file =>
      val path = s"weir/postgres/migrations/$file.sql"
      val stream = Option(getClass.getClassLoader.getResourceAsStream(path))
        .getOrElse(throw new IllegalStateException(s"migration $path is missing from the class path"))
      val text =
        try IoSource.fromInputStream(stream)(using Codec.UTF8).mkString
        finally stream.close()
      Migration(
        file.takeWhile(_ != '-').toInt,
        file.dropWhile(_ != '-').drop(1),
        text,
        compatibleWithPrevious(path, text)
      )
    }

  /** The version this library needs. */
  def latest: Int = all.last.version

  /** The migration that adds `migrations.compatible_with_previous`: the rows of later ones record it. */
  private[postgres] val recordedSince: Int = 10

  private val header = "-- weir: compatible-with-previous: "

  /** The answer of `text`'s first line, which must say `yes` or `no`. */
  private[postgres] def compatibleWithPrevious(path: String, text: String): Boolean =
    text.linesIterator.nextOption().filter(_.startsWith(header)).map(_.stripPrefix(header).trim) match
      case Some("yes") => true
      case Some("no") => false
      case other =>
        throw new IllegalStateException(
          s"migration $path must start with '${header}yes' or '${header}no', was: ${other.getOrElse("no such line")}"
        )

  /** What a release of weir knows: [[all]] for this one. */
  private[postgres] val current: Release = Release(all)

  /** Applies every missing migration to `schema`; returns the versions applied (empty when up to date). */
  private[postgres] def migrate(schema: Schema): ConnectionIO[Vector[Int]] = current.migrate(schema)

  /** Applies the missing migrations up to `version` only: a schema as an earlier release left it. */
  private[postgres] def migrateTo(schema: Schema, version: Int): ConnectionIO[Vector[Int]] =
    current.migrateTo(schema, version)

  /** [[Release.check]] for this release. */
  private[postgres] def check(schema: Schema): ConnectionIO[Check] = current.check(schema)

  /** What a check found in a schema that this release may run against. */
  private[postgres] enum Check:

    /** The schema is at this release's version. */
    case Current

    /**
     * The schema is at `version`, newer than this release's `latest`, and every migration beyond `latest`
     * (`beyond`) is recorded as compatible with earlier releases.
     */
    case Newer(schema: Schema, version: Int, latest: Int, beyond: Vector[Int])

    /** What to log about it: nothing when current. */
    def warning: Option[String] = this match
      case Current => None
      case Newer(schema, version, latest, beyond) =>
        Some(
          s"schema '${schema.name}' is at version $version, newer than this weir knows ($latest); accepted, as " +
            s"every migration beyond $latest (${beyond.mkString(", ")}) keeps earlier releases' workers working: " +
            "upgrade this process's weir when you can"
        )

  /** One row of a schema's `migrations` table; `compatibleWithPrevious` is None where the row does not say. */
  private[postgres] final case class Applied(
      version: Int,
      name: String,
      compatibleWithPrevious: Option[Boolean]
  )

  /**
   * The migrations one release of weir knows, `known` (in order, not empty): what its `migrate` applies and
   * its `check` accepts. [[current]] is this library's; suites build others to play an earlier release (a
   * prefix) or a later one (more migrations).
   */
  private[postgres] final case class Release(known: Vector[Migration]):

    def latest: Int = known.last.version

    /** This release as an earlier one that knew the migrations up to `version` only. */
    def pinnedAt(version: Int): Release = Release(known.filter(_.version <= version))

    /** A later release, which knows `more` too. */
    def plus(more: Migration*): Release = Release(known ++ more)

    def migrate(schema: Schema): ConnectionIO[Vector[Int]] = migrateTo(schema, latest)

    /**
     * Applies the missing migrations up to `version`. A schema with migrations beyond [[latest]] is left as
     * it is when this release may run against it (see [[check]]) and refused with [[SchemaError]] otherwise.
     */
    def migrateTo(schema: Schema, version: Int): ConnectionIO[Vector[Int]] =
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
        rows <- applied(schema)
        done = rows.map(_.version).toSet
        _ <- if done.exists(_ > latest) then judge(schema, rows).liftTo[ConnectionIO].void else FC.unit
        missing = known.filter(m => m.version <= version && !done(m.version))
        _ <- missing.traverse_ { m =>
          Fragment.const(m.sql.replace("weir_schema", schema.name)).update.run *> record(schema, m)
        }
        _ <- if missing.exists(_.version == recordedSince) then backfill(schema) else FC.unit
      yield missing.map(_.version)

    /** The row of `m`, with its answer once the table has the column for it. */
    private def record(schema: Schema, m: Migration): ConnectionIO[Int] =
      if m.version < recordedSince then
        (Fragment.const(s"INSERT INTO ${schema("migrations")} (version, name) VALUES (") ++
          fr0"${m.version}, ${m.name})").update.run
      else
        (Fragment.const(
          s"INSERT INTO ${schema("migrations")} (version, name, compatible_with_previous) VALUES ("
        ) ++
          fr0"${m.version}, ${m.name}, ${m.compatibleWithPrevious})").update.run

    /** The answers of the migrations applied before the table could hold them, from their files. */
    private def backfill(schema: Schema): ConnectionIO[Int] =
      val answers = known.map(m => s"(${m.version}, ${m.compatibleWithPrevious})").mkString(", ")
      Fragment
        .const(
          s"UPDATE ${schema("migrations")} AS m SET compatible_with_previous = a.compatible FROM (VALUES $answers) AS a(version, compatible) WHERE m.version = a.version AND m.compatible_with_previous IS NULL"
        )
        .update
        .run

    /**
     * Fails with [[SchemaError]] unless this release may run against `schema`: it exists and is at [[latest]],
     * or newer with every migration beyond [[latest]] recorded as compatible ([[Check.Newer]]). A worker
     * never runs against a schema it does not know to be safe.
     */
    def check(schema: Schema): ConnectionIO[Check] =
      sql"SELECT to_regclass(${schema("migrations")}) IS NOT NULL".query[Boolean].unique.flatMap { exists =>
        if !exists then
          FC.raiseError(
            SchemaError(
              s"schema '${schema.name}' has no weir tables: run migrate first (library or `./weir durable migrate`)"
            )
          )
        else applied(schema).flatMap(rows => judge(schema, rows).liftTo[ConnectionIO])
      }

    /** The decision of [[check]] on the rows of `schema`'s `migrations` table. */
    private[postgres] def judge(schema: Schema, rows: Vector[Applied]): Either[SchemaError, Check] =
      val done = rows.map(_.version).toSet
      val at = if done.isEmpty then 0 else done.max
      val missing = known.map(_.version).filterNot(done)
      val beyond = rows.filter(_.version > latest).sortBy(_.version)
      if beyond.isEmpty then
        if missing.isEmpty then Right(Check.Current)
        else
          Left(
            SchemaError(s"schema '${schema.name}' is at version $at, this weir needs $latest: run migrate")
          )
      else if missing.nonEmpty then
        Left(
          SchemaError(
            s"schema '${schema.name}' is at version $at, newer than this weir knows ($latest), yet lacks its migration(s) ${missing
                .mkString(", ")}: it was not migrated in order; migrate it with a weir of version $at"
          )
        )
      else
        beyond.find(!_.compatibleWithPrevious.contains(true)) match
          case None => Right(Check.Newer(schema, at, latest, beyond.map(_.version)))
          case Some(m) =>
            val says = if m.compatibleWithPrevious.isEmpty then "does not say it is" else "is not"
            Left(
              SchemaError(
                s"schema '${schema.name}' is at version $at, newer than this weir knows ($latest), and migration ${m.version} (${m.name}) $says compatible with earlier releases' workers: run a weir that knows version $at"
              )
            )

  /** The rows of `schema`'s `migrations` table, with their answers where the table has the column. */
  private def applied(schema: Schema): ConnectionIO[Vector[Applied]] =
    sql"""SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(${schema("migrations")})
            AND attname = 'compatible_with_previous' AND NOT attisdropped)"""
      .query[Boolean]
      .unique
      .flatMap { recorded =>
        val answer = if recorded then "compatible_with_previous" else "NULL::boolean"
        Fragment
          .const(s"SELECT version, name, $answer FROM ${schema("migrations")} ORDER BY version")
          .query[Applied]
          .to[Vector]
      }

/** The database's schema is missing, too old for this library, or newer in a way it cannot run against. */
final class SchemaError(message: String) extends RuntimeException(message)
