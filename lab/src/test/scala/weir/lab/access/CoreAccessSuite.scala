package weir.lab.access

import munit.FunSuite

import java.io.File
import java.nio.file.{Files, Path, Paths}
import java.util.zip.ZipFile
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * No module reaches into weir-core past its public API: every other module's main classes on this suite's
 * class path (all of them but the benchmarks) are read as TASTy, and any reference to a qualified-private
 * member of core fails the suite, naming the file, the line and the symbol ([[CoreAccess]]). A planted use
 * in this suite's own test classes shows that the check finds one.
 */
class CoreAccessSuite extends FunSuite:

  override val munitTimeout: Duration = 5.minutes

  private val classpath: Vector[String] =
    sys.props.get("surefire.test.class.path").orElse(sys.props.get("java.class.path")).toVector
      .flatMap(_.split(File.pathSeparator)).filter(_.nonEmpty).distinct

  /** The class path entry (a directory or a jar) that holds the resource `path`. */
  private def rootOf(path: String): Path =
    val url =
      Option(getClass.getClassLoader.getResource(path)).getOrElse(fail(s"$path is on no class path entry"))
    url.getProtocol match
      case "file" => Paths.get(url.toURI).toString.stripSuffix(path).pipe(Paths.get(_)).normalize
      case "jar" => Paths.get(java.net.URI.create(url.getFile.takeWhile(_ != '!'))).normalize
      case other => fail(s"$path is in a $other entry: $url")

  extension [A](a: A) private def pipe[B](f: A => B): B = f(a)

  /** The TASTy files of `root` (a directory or a jar), as paths relative to it. */
  private def tastyIn(root: Path): Vector[String] =
    if Files.isDirectory(root) then
      val walk = Files.walk(root)
      try
        walk.iterator.asScala.filter(_.toString.endsWith(".tasty")).map(root.relativize(_).toString).toVector
      finally walk.close()
    else if root.toString.endsWith(".jar") && Files.exists(root) then
      val zip = new ZipFile(root.toFile)
      try zip.entries.asScala.map(_.getName).filter(_.endsWith(".tasty")).toVector
      finally zip.close()
    else Vector.empty

  private val core: Path = rootOf("weir/Pipeline.tasty")

  /** Core's top-level definitions, named as their TASTy files are. */
  private val coreNames: Set[String] =
    tastyIn(core).map(_.stripSuffix(".tasty").replace('/', '.').replace('\\', '.')).toSet

  /** Every other module's main classes: class path entries with TASTy of package weir, tests' excluded. */
  private val modules: Vector[Path] =
    classpath.map(Paths.get(_).normalize).filter { p =>
      val name = p.getFileName.toString
      p != core && name != "test-classes" && !name.endsWith("-tests.jar") &&
      tastyIn(p).exists(_.startsWith("weir/"))
    }

  /** A main class of each module besides core, by module. */
  private val anchors = Vector(
    "testkit" -> "weir/testkit/Eventually.tasty",
    "runtime" -> "weir/runtime/WeirRuntime.tasty",
    "postgres" -> "weir/postgres/DurableWorker.tasty",
    "kafka" -> "weir/kafka/KafkaSource.tasty",
    "testkit-postgres" -> "weir/testkit/postgres/TestJob.tasty",
    "testkit-kafka" -> "weir/testkit/kafka/TestRecord.tasty",
    "console" -> "weir/console/ConsoleOptions.tasty",
    "otel" -> "weir/otel/WeirMetrics.tasty",
    "otel-postgres" -> "weir/otel/DurableMetrics.tasty",
    "otel-kafka" -> "weir/otel/KafkaMetrics.tasty",
    "cli" -> "weir/cli/Commands.tasty",
    "lab" -> "weir/lab/Main.tasty"
  )

  private def uses(roots: Vector[Path]): Vector[CoreAccess.Use] =
    val (dirs, jars) = roots.partition(Files.isDirectory(_))
    val files = dirs.flatMap(d => tastyIn(d).map(d.resolve(_).toString))
    CoreAccess.find(coreNames, files.toList, jars.map(_.toString).toList, classpath.toList)

  test("the check reads the main classes of every module besides core, and core's own") {
    assert(coreNames("weir.Pipeline") && coreNames("weir.internal.Engine"), coreNames)
    val missing = anchors.filterNot((_, anchor) => modules.contains(rootOf(anchor)))
    assert(missing.isEmpty, s"modules not read: ${missing.map(_._1)}; read: $modules")
  }

  test("no module uses a member of weir-core that is not public") {
    val found = uses(modules)
    assert(
      found.isEmpty,
      found.mkString("members of weir-core that are not public, used elsewhere:\n", "\n", "")
    )
  }

  test("a planted use of a private[weir] member is found, with its file, line and symbol") {
    val planted = rootOf("weir/lab/access/PlantedAccess.tasty")
    val source = Paths.get(sys.props.getOrElse("user.dir", ".")).resolve(
      "src/test/scala/weir/lab/access/PlantedAccess.scala"
    )
    val line = Files.readAllLines(source).asScala.indexWhere(_.contains("source.refusable")) + 1
    assert(line > 0, s"no planted use in $source")
    val found = CoreAccess.find(
      coreNames,
      List(planted.resolve("weir/lab/access/PlantedAccess.tasty").toString),
      Nil,
      classpath.toList
    )
    assertEquals(
      found.map(u => (Paths.get(u.file).getFileName.toString, u.line, u.symbol, u.qualifier)),
      Vector(("PlantedAccess.scala", line, "weir.Source.refusable", "weir"))
    )
  }
