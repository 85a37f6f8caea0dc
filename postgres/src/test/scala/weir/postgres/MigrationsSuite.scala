package weir.postgres

import scala.concurrent.duration.*

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*

import java.nio.file.{Files, Paths}

class MigrationsSuite extends DbSuite:

  test("migrate creates the schema once; a second run applies nothing") {
    val config = TestDatabase.config(TestDatabase.freshSchema())
    for
      first <- Database.migrate[IO](config)
      second <- Database.migrate[IO](config)
      _ <- Database.connect[IO](config).use_
      _ <- noLeftovers
    yield
      assertEquals(first, Migrations.all.map(_.version))
      assertEquals(second, Vector.empty)
  }

  test("migrate records every migration's answer to whether earlier releases' workers keep working") {
    val config = TestDatabase.config(TestDatabase.freshSchema())
    for
      _ <- Database.migrate[IO](config)
      answers <- Rows.query[(Int, Option[Boolean])](
        s"SELECT version, compatible_with_previous FROM ${config.schema("migrations")} ORDER BY version"
      )
      _ <- TestDatabase.drop(config.schema)
    yield assertEquals(answers, Migrations.all.map(m => (m.version, Some(m.compatibleWithPrevious))))
  }

  test("every migration file's first line says yes or no; one that does not is refused, naming the file") {
    assertEquals(Migrations.all.map(_.version), (1 to Migrations.latest).toVector)
    assertEquals(
      Migrations.compatibleWithPrevious("a.sql", "-- weir: compatible-with-previous: yes\n--   why"),
      true
    )
    assertEquals(Migrations.compatibleWithPrevious("a.sql", "-- weir: compatible-with-previous: no"), false)
    Vector(
      "-- weir: compatible-with-previous: maybe",
      "-- a migration\n-- weir: compatible-with-previous: yes",
      ""
    )
      .foreach { text =>
        val e = intercept[IllegalStateException](Migrations.compatibleWithPrevious("0099-x.sql", text))
        assert(e.getMessage.contains("migration 0099-x.sql must start with"), e.getMessage)
      }
  }

  test("docs/durable.md's table of migrations says what each file says") {
    val doc = Files.readString(Paths.get(sys.props.getOrElse("user.dir", ".")).resolve("../docs/durable.md"))
    val row = raw"\| (\d+) \| `(\d{4}-[a-z0-9-]+)\.sql` \| (yes|no) \|.*".r
    val table = doc.linesIterator.collect { case row(version, file, answer) =>
      (version.toInt, file, answer == "yes")
    }.toVector
    assertEquals(
      table,
      Migrations.all.map(m => (m.version, f"${m.version}%04d-${m.name}", m.compatibleWithPrevious))
    )
  }

  test("four processes' worth of migrate at once apply each migration exactly once") {
    val config = TestDatabase.config(TestDatabase.freshSchema())
    for
      results <- List.fill(4)(Database.migrate[IO](config)).parSequence
      versions <- Fragment
        .const(s"SELECT count(*) FROM ${config.schema("migrations")}")
        .query[Long]
        .unique
        .transact(TestDatabase.admin)
      _ <- noLeftovers
    yield
      assertEquals(results.flatten.sorted, Migrations.all.map(_.version).toList)
      assertEquals(versions, Migrations.all.size.toLong)
  }

  test("connect to a schema that was never migrated fails naming the schema") {
    val schema = TestDatabase.freshSchema()
    Database.connect[IO](TestDatabase.config(schema)).use_.attempt.flatMap { r =>
      r match
        case Left(e: SchemaError) =>
          assert(e.getMessage.contains(s"'$schema'") && e.getMessage.contains("migrate"))
        case other => fail(s"expected a SchemaError, got $other")
      noLeftovers
    }
  }

  test("connect to a schema at a newer version fails naming both versions") {
    val config = TestDatabase.config(TestDatabase.freshSchema())
    for
      _ <- Database.migrate[IO](config)
      _ <- Fragment
        .const(
          s"INSERT INTO ${config.schema("migrations")} (version, name) VALUES (${Migrations.latest + 1}, 'future')"
        )
        .update
        .run
        .transact(TestDatabase.admin)
      r <- Database.connect[IO](config).use_.attempt
      _ <- noLeftovers
    yield r match
      case Left(e: SchemaError) =>
        assert(e.getMessage.contains(s"version ${Migrations.latest + 1}"), e.getMessage)
        assert(e.getMessage.contains(s"(${Migrations.latest})"), e.getMessage)
      case other => fail(s"expected a SchemaError, got $other")
  }

  test("an unreachable server fails with DatabaseUnreachable naming the URL without its password") {
    val config = DatabaseConfig("postgresql://weir:secret@127.0.0.1:1/nowhere", connectTimeout = 1.second)
    Database.connect[IO](config).use_.attempt.map {
      case Left(e: DatabaseUnreachable) =>
        assert(e.getMessage.contains("127.0.0.1:1/nowhere"), e.getMessage)
        assert(!e.getMessage.contains("secret"), e.getMessage)
      case other => fail(s"expected DatabaseUnreachable, got $other")
    }
  }

  test(
    "a malformed URL, schema name or pool size throws nothing when built; connect fails naming each value"
  ) {
    val url = intercept[IllegalArgumentException](DatabaseConfig.toJdbc("mysql://localhost/x"))
    assert(url.getMessage.contains("mysql://localhost/x"), url.getMessage)
    // built and copied: nothing throws
    val config = DatabaseConfig("mysql://u:secret@localhost/x", schema = Schema("Weir; DROP TABLE x"))
      .copy(poolSize = 0)
    Database.connect[IO](config).use_.intercept[weir.InvalidSettings].map { e =>
      assert(e.getMessage.startsWith("invalid DatabaseConfig: "), e.getMessage)
      assert(e.getMessage.contains("mysql://u:***@localhost/x"), e.getMessage)
      assert(!e.getMessage.contains("secret"), e.getMessage)
      assert(e.getMessage.contains("'Weir; DROP TABLE x'"), e.getMessage)
      assert(e.getMessage.contains("poolSize must be > 0, was: 0"), e.getMessage)
      assertEquals(e.errors.size, 3, e.getMessage)
    }
  }

  test("a bad URL fails inside the effect, naming the URL: building the IO or Resource throws nothing") {
    // each URL, and what the message must show of it (never the password)
    val urls = Vector(
      "mysql://u:secret@localhost/x" -> "mysql://u:***@localhost/x",
      "postgresql://u:secret@/no-host" -> "postgresql://u:***@/no-host",
      "postgresql://u:secret@h st/x" -> "postgresql://u:***@h st/x"
    )
    urls.traverse_ { (url, shown) =>
      val config = DatabaseConfig(url)
      // built, not run: none of these may throw
      val built = Vector(
        Database.migrate[IO](config),
        Database.connect[IO](config).use_.as(Vector.empty[Int]),
        Database.migrateAndConnect[IO](config).use_.as(Vector.empty[Int])
      )
      built.traverse_(_.attempt.map {
        case Left(e: IllegalArgumentException) =>
          assert(e.getMessage.contains(shown), e.getMessage)
          assert(!e.getMessage.contains("secret"), e.getMessage)
        case other => fail(s"expected an IllegalArgumentException for '$url', got $other")
      })
    }
  }
