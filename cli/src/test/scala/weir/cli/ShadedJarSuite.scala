package weir.cli

import munit.FunSuite

import java.nio.file.{Files, Paths}
import java.util.zip.ZipFile
import scala.jdk.CollectionConverters.*

/**
 * The operator's jar holds the operator's tools and what they need, nothing of the lab's: no embedded
 * PostgreSQL server, no JMH, no Kafka (broker or client), no HTTP client of the lab, no lab class. It reads
 * the shaded jar `package` wrote, which the build names in `weir.cli.jar` for its run in
 * `integration-test`, after `package` (`verify`, CI); without that property (a run of `test` that names
 * it) there is no jar to read yet, and it is skipped.
 */
class ShadedJarSuite extends FunSuite:

  /** Each forbidden part, and how its classes or resources are named in a jar. */
  private val forbidden: Vector[(String, String => Boolean)] = Vector(
    "embedded PostgreSQL (io/zonky/)" -> (_.startsWith("io/zonky/")),
    // the server's binaries: a .txz at the root of zonky's binaries jar
    "PostgreSQL binaries (postgres-*.txz)" -> (e => e.startsWith("postgres-") && e.endsWith(".txz")),
    "JMH (org/openjdk/jmh/)" -> (_.startsWith("org/openjdk/jmh/")),
    "a Kafka broker (kafka/)" -> (_.startsWith("kafka/")),
    "Kafka (org/apache/kafka/)" -> (_.startsWith("org/apache/kafka/")),
    "Jetty (org/eclipse/jetty/)" -> (_.startsWith("org/eclipse/jetty/")),
    "the lab (weir/lab/)" -> (_.startsWith("weir/lab/"))
  )

  private val jar = sys.props.get("weir.cli.jar").map(Paths.get(_))

  override def beforeEach(context: BeforeEach): Unit =
    assume(jar.isDefined, "no -Dweir.cli.jar: run in the build's integration-test phase")

  private lazy val entries: Vector[String] =
    val path = jar.get
    assert(Files.isRegularFile(path), s"no jar at $path: `package` writes it")
    val zip = new ZipFile(path.toFile)
    try zip.entries.asScala.map(_.getName).toVector
    finally zip.close()

  test("the jar runs the operator's commands: its main class and what they use are in it") {
    val required = Vector(
      "weir/cli/Main.class",
      "weir/cli/DurableCli.class",
      "weir/cli/ConsoleCli.class",
      "weir/postgres/TaskAdmin.class",
      "weir/console/WeirConsole.class",
      "org/postgresql/Driver.class"
    )
    assertEquals(required.filterNot(entries.toSet), Vector.empty)
  }

  forbidden.foreach { (part, in) =>
    test(s"the jar holds no $part") {
      val found = entries.filter(in)
      assert(found.isEmpty, s"${found.size} entries, e.g. ${found.take(5).mkString(", ")}")
    }
  }
