package weir.testkit

import cats.effect.{IO, Resource}
import munit.CatsEffectSuite

import java.sql.{Connection, DriverManager}
import scala.concurrent.duration.*

/** Embedded servers start, answer, keep their data across a restart, and are gone once released. */
class PostgresServerSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 120.seconds

  private def connection(url: String): Resource[IO, Connection] =
    Resource.make(IO.blocking(DriverManager.getConnection(url)))(c => IO.blocking(c.close()))

  private def query(url: String, sql: String): IO[String] =
    connection(url).use(c =>
      IO.blocking {
        val rs = c.createStatement().executeQuery(sql)
        rs.next()
        rs.getString(1)
      }
    )

  private def execute(url: String, sql: String): IO[Unit] =
    connection(url).use(c => IO.blocking(c.createStatement().execute(sql)).void)

  test(
    "an embedded server answers, keeps committed rows across a restart on the same URL, and is stopped once released"
  ) {
    for
      url <- PostgresServer.embedded[IO].use { server =>
        for
          _ <-
            execute(server.url, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before the restart')")
          restart <- IO.fromOption(server.restart)(new AssertionError("an embedded server has a restart"))
          _ <- restart
          kept <- query(server.url, "SELECT v FROM kept")
          version <- query(server.url, "SHOW server_version")
        yield
          assert(server.embedded)
          assertEquals(kept, "before the restart")
          assert(version.nonEmpty, version)
          server.url
      }
      after <- query(url, "SELECT 1").attempt
    yield assert(
      after.left.exists(_.isInstanceOf[java.sql.SQLException]),
      s"released, it still answered: $after"
    )
  }

  test(
    "the shared server is started once per JVM: every call gives the same running server, without a restart"
  ) {
    val configured = PostgresServer.fromVariable(sys.env.get(PostgresServer.urlVariable))
    for
      a <- PostgresServer.shared[IO]
      b <- PostgresServer.shared[IO]
      // an embedded server's URL is JDBC's; the variable's may be libpq's, which DriverManager does not take
      one <- if a.embedded then query(a.url, "SELECT 1") else IO.pure("1")
    yield
      assertEquals(a.url, b.url)
      assertEquals(a.restart, None)
      assertEquals(one, "1")
      // the variable may name CI's own server: then the shared server is that one
      assertEquals(a.embedded, configured.isEmpty)
      configured.foreach(url => assertEquals(a.url, url))
  }

  test("WEIR_TEST_DATABASE_URL names an external server when set and not empty") {
    assertEquals(PostgresServer.fromVariable(None), None)
    assertEquals(PostgresServer.fromVariable(Some("")), None)
    assertEquals(PostgresServer.fromVariable(Some("  ")), None)
    assertEquals(PostgresServer.fromVariable(Some("postgresql://u@h/db")), Some("postgresql://u@h/db"))
  }

  test("an external server is neither embedded nor restarted by the test kit") {
    val s = PostgresServer.external[IO]("postgresql://u@h/db")
    assertEquals((s.url, s.embedded, s.restart), ("postgresql://u@h/db", false, None))
  }
