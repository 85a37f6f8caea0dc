package weir.guide

import munit.FunSuite

import java.nio.file.{Files, Path, Paths}
import scala.jdk.CollectionConverters.*

/**
 * The docs cannot rot: every ```scala block of the README and the user pages must appear verbatim in a
 * source file of this package (or its subpackages, or weir-kafka's `weir.kafka.guide`, whose suite runs the
 * Kafka example against its broker, or weir-testkit's `weir.testkit`, whose in-memory source is the
 * example "Writing a source" walks through), which the build compiles with the strict flags. A snippet
 * edited in the docs but not here, or here but not in the docs, fails this suite.
 */
class DocSnippetsSuite extends FunSuite:

  private val root: Path = Paths.get(sys.props.getOrElse("user.dir", ".")).resolve("..").normalize

  private val sources: Vector[(Path, String)] =
    Vector(
      "lab/src/test/scala/weir/guide",
      "kafka/src/test/scala/weir/kafka/guide",
      "testkit/src/main/scala/weir/testkit"
    ).flatMap { dir =>
      val walk = Files.walk(root.resolve(dir))
      try walk.iterator.asScala.toVector.filter(_.toString.endsWith(".scala"))
      finally walk.close()
    }.map(p => p -> DocSnippetsSuite.normalize(Files.readString(p)))

  /** The docs whose Scala blocks must compile, with how many blocks each has at least. */
  private val docs = Vector(
    "README.md" -> 2,
    "docs/guide.md" -> 15,
    "docs/durable.md" -> 12,
    "docs/console.md" -> 1,
    "docs/kafka.md" -> 1,
    "docs/sources.md" -> 7
  )

  docs.foreach { (doc, atLeast) =>
    test(s"every scala block of $doc is compiled code in weir.guide") {
      val path = root.resolve(doc)
      assert(Files.exists(path), s"$path is missing")
      val blocks = DocSnippetsSuite.scalaBlocks(Files.readString(path))
      assert(blocks.size >= atLeast, s"$doc: expected at least $atLeast scala blocks, found ${blocks.size}")
      val missing = blocks.zipWithIndex.filterNot((block, _) => sources.exists(_._2.contains(block)))
      assert(
        missing.isEmpty,
        missing
          .map((block, i) => s"$doc, scala block ${i + 1} is in no file of weir.guide:\n$block")
          .mkString("\n\n")
      )
    }
  }

  test("the compiled sources include the subpackages, weir-kafka's guide and weir-testkit") {
    val names = sources.map(_._1.getFileName.toString).toSet
    assert(
      Set("QuickStart.scala", "Setup.scala", "KafkaExample.scala", "InMemorySource.scala").subsetOf(names),
      names
    )
  }

  test("the extractor finds fenced scala blocks and ignores other languages") {
    val md = "text\n```scala\nval a = 1  \n\nval b = 2\n```\n```\n./weir test\n```\n```scala\nobject X\n```\n"
    assertEquals(DocSnippetsSuite.scalaBlocks(md), Vector("val a = 1\n\nval b = 2", "object X"))
  }

  test("a block that differs from the code by one character is not found") {
    val code = DocSnippetsSuite.normalize("object A:\n  val x = 1\n")
    assert(code.contains(DocSnippetsSuite.scalaBlocks("```scala\nobject A:\n  val x = 1\n```")(0)))
    assert(!code.contains(DocSnippetsSuite.scalaBlocks("```scala\nobject A:\n  val x = 2\n```")(0)))
  }

object DocSnippetsSuite:

  /** Trailing spaces dropped, line ends unified, so that only the code itself is compared. */
  def normalize(text: String): String =
    text.replace("\r\n", "\n").linesIterator.map(_.replaceAll("\\s+$", "")).mkString("\n")

  /** The bodies of the ```scala fenced blocks, in order, normalized and without surrounding blank lines. */
  def scalaBlocks(markdown: String): Vector[String] =
    val lines = normalize(markdown).split("\n", -1).toVector
    val (blocks, _) = lines.foldLeft((Vector.empty[Vector[String]], Option.empty[Vector[String]])) {
      case ((done, None), line) if line.trim == "```scala" => (done, Some(Vector.empty))
      case ((done, None), _) => (done, None)
      case ((done, Some(open)), line) if line.trim == "```" => (done :+ open, None)
      case ((done, Some(open)), line) => (done, Some(open :+ line))
    }
    blocks.map(_.dropWhile(_.isEmpty).reverse.dropWhile(_.isEmpty).reverse.mkString("\n"))
