package weir.postgres

import java.sql.DriverManager
import java.util.concurrent.ThreadLocalRandom

/**
 * A database of this JVM's own on an external server, for [[TestDatabase]]: created at first use as
 * `weir_test_<pid>_<random>` (unique however many machines share the server), dropped with its sessions
 * when the JVM exits. A JVM killed outright leaves its database behind.
 */
private[postgres] object OwnDatabase:

  /** `url` (any form [[DatabaseConfig]] takes) naming a new database of this JVM's, on the same server. */
  def on(url: String): String =
    val name = s"weir_test_${ProcessHandle.current().pid()}_${ThreadLocalRandom.current().nextInt(1 << 30)}"
    execute(url, s"CREATE DATABASE $name")
    sys.addShutdownHook(
      // WITH (FORCE): sessions a test left open (the check after each test fails on those) end with it
      try execute(url, s"DROP DATABASE IF EXISTS $name WITH (FORCE)")
      catch case _: java.sql.SQLException => ()
    ): Unit
    withDatabase(url, name)

  /** `url` with its database replaced by `name`; its user, password and parameters are kept. */
  def withDatabase(url: String, name: String): String =
    url match
      case Form(server, _, query) => s"$server/$name${Option(query).getOrElse("")}"
      case _ =>
        throw new IllegalArgumentException(
          s"a test server's URL must name its host, was: '${DatabaseConfig(url).redactedUrl}'"
        )

  // scheme and authority; path; query
  private val Form = """^((?:jdbc:)?postgres(?:ql)?://[^/?]*)(/[^?]*)?(\?.*)?$""".r

  private def execute(url: String, sql: String): Unit =
    val (jdbc, props) = DatabaseConfig.toJdbc(url)
    val c = DriverManager.getConnection(jdbc, props)
    try c.createStatement().execute(sql): Unit
    finally c.close()
