package weir.lab

import munit.FunSuite
import org.openjdk.jmh.runner.options.{CommandLineOptionException, CommandLineOptions}

import java.nio.file.{Files, Path, Paths}
import scala.jdk.CollectionConverters.*
import scala.util.Try

/**
 * The front door cannot rot: every `./weir ...` command in the README, the user pages in `docs/` (the
 * guide, the durable, console and Kafka pages) and the lab pages must be one the launcher accepts. The
 * lab's and the operator's commands are parsed by the CLI's own parsers ([[Main.check]], the registry that
 * holds both: unknown commands, unknown options and bad values are refused, nothing runs); `./weir bench`
 * arguments by JMH's option parser; `./weir test` passes its arguments to Maven.
 */
class DocCommandsSuite extends FunSuite:
  import DocCommandsSuite.*

  private val root: Path = Paths.get(sys.props.getOrElse("user.dir", ".")).resolve("..").normalize

  private val docs: Vector[Path] =
    def pages(dir: String) =
      Files.list(root.resolve(dir)).iterator.asScala.filter(_.toString.endsWith(".md")).toVector.sorted
    Vector(root.resolve("README.md")) ++ pages("docs") ++ pages("docs/lab")

  test("the docs hold the commands this check is about") {
    val counts = docs.map(d => root.relativize(d).toString -> commands(Files.readString(d)).size).toMap
    assert(counts("README.md") >= 5, counts)
    assert(counts("docs/lab/compare.md") >= 5, counts)
    assert(counts("docs/durable.md") >= 5, counts)
    assert(counts("docs/console.md") >= 2, counts)
    assert(docs.size >= 14, docs)
  }

  docs.foreach { doc =>
    test(s"every ./weir command in ${root.relativize(doc)} is valid") {
      val bad =
        commands(Files.readString(doc)).flatMap(c => validate(c).left.toOption.map(why => s"$c\n  -> $why"))
      assert(bad.isEmpty, bad.mkString("\n"))
    }
  }

  test("unknown commands, experiments and options are refused") {
    List(
      "./weir nosuch",
      "./weir compare --nosuch",
      "./weir compare --approaches weir,nosuch",
      "./weir compare --clock sideways",
      "./weir lab nosuch",
      "./weir lab channels --nosuch",
      "./weir lab requests --limit 0",
      "./weir lab requests --n 10",
      "./weir lab channels --max-delay 50",
      "./weir soak",
      "./weir example",
      "./weir durable --url postgresql://localhost/x",
      "./weir console --counts-every 2",
      "./weir lab adaptive --nosuch",
      "./weir lab durable --nosuch",
      "./weir durable migrate --nosuch",
      "./weir bench -nosuch",
      "./weir"
    ).foreach(c => assert(validate(c).isLeft, s"accepted: $c"))
  }

  test("valid commands are accepted, --help included") {
    List(
      "./weir --help",
      "./weir compare --quick --runs 2",
      "./weir lab --help",
      "./weir lab trampoline --help",
      "./weir lab example --tasks 10",
      "./weir lab heap --tasks 1000 --progress",
      "./weir durable --help",
      "./weir durable limit --help",
      "./weir durable migrate --url postgresql://localhost/x",
      "./weir console --counts-every 500ms --url postgresql://localhost/x",
      "./weir bench 'WeirBench' -f 1 -wi 0",
      "./weir test -pl core"
    ).foreach(c => assertEquals(validate(c), Right(()), c))
  }

  test("commands are found in code blocks (with continuations and comments) and in inline code") {
    val md = """`./weir` runs `./weir compare --quick` or `./weir lab <experiment>`:
               |```
               |$ ./weir lab channels --quick      # CI size
               |JAVA_OPTS=-Xmx1g ./weir lab blocking \
               |  --time-scale 0.1
               |# ./weir not-a-command in a comment
               |mvn -B verify
               |```
               |""".stripMargin
    assertEquals(
      commands(md),
      Vector("./weir lab channels --quick", "./weir lab blocking --time-scale 0.1", "./weir compare --quick")
    )
  }

object DocCommandsSuite:

  /**
   * The `./weir` commands of a Markdown text: lines of fenced blocks (joined across `\` continuations,
   * without a trailing `# comment`, skipping comment lines) and inline code spans. The launcher's bare name
   * (`./weir` in a sentence) is a name, not a command; a synopsis with placeholders (`<experiment>`,
   * `[JMH args]`, `...`, `URL`, a shell variable's `$TOKEN`) is not a command and is skipped.
   */
  def commands(markdown: String): Vector[String] =
    val lines = markdown.linesIterator.toVector
    val (inBlocks, outside, _) =
      lines.foldLeft((Vector.empty[String], Vector.empty[String], false)) { case ((in, out, fenced), line) =>
        if line.trim.startsWith("```") then (in, out, !fenced)
        else if fenced then (in :+ line, out, fenced)
        else (in, out :+ line, fenced)
      }
    val joined = inBlocks.foldLeft(Vector.empty[String]) { (acc, line) =>
      if acc.nonEmpty && acc.last.endsWith("\\") then acc.init :+ (acc.last.dropRight(1) + " " + line.trim)
      else acc :+ line
    }
    val fromBlocks = joined
      .filterNot(_.trim.startsWith("#"))
      .flatMap(l => fromWeir(stripComment(l)))
    val inline = "`([^`]*\\./weir[^`]*)`".r
    // a code span inside a table cell is written \`…\`: its closing backslash is not part of the command
    val fromText =
      outside.flatMap(l => inline.findAllMatchIn(l).map(_.group(1).stripSuffix("\\")).flatMap(fromWeir))
    (fromBlocks ++ fromText).map(_.trim.replaceAll("\\s+", " ")).filterNot(c =>
      c == "./weir" || isSynopsis(c)
    )

  private def fromWeir(s: String): Option[String] =
    val i = s.indexOf("./weir")
    Option.when(i >= 0 && (i + 6 == s.length || s(i + 6) == ' '))(s.substring(i))

  private def stripComment(line: String): String =
    val i = line.indexOf(" #")
    if i >= 0 then line.substring(0, i) else line

  private def isSynopsis(command: String): Boolean =
    command.contains("<") || command.contains("[") || command.contains("...") || command.contains("…") ||
      words(command).exists(w => w.matches("[A-Z][A-Z0-9_]+") || w.startsWith("$"))

  /** Shell words: whitespace-separated, with '…' and "…" quoting. */
  def words(command: String): Vector[String] =
    val out = Vector.newBuilder[String]
    val cur = new StringBuilder
    var quote: Option[Char] = None
    var started = false
    command.foreach { c =>
      quote match
        case Some(q) if c == q => quote = None
        case Some(_) => cur += c
        case None if c == '\'' || c == '"' => quote = Some(c); started = true
        case None if c.isWhitespace =>
          if started || cur.nonEmpty then out += cur.result()
          cur.clear(); started = false
        case None => cur += c
    }
    if started || cur.nonEmpty then out += cur.result()
    out.result()

  /** Whether the launcher accepts the command: `Left(why)` if not. */
  def validate(command: String): Either[String, Unit] =
    words(command).toList match
      case "./weir" :: "test" :: _ => Right(())
      case "./weir" :: "bench" :: args =>
        Try(new CommandLineOptions(args*)).toEither.left.map {
          case e: CommandLineOptionException => e.getMessage
          case e => e.toString
        }.map(_ => ())
      case "./weir" :: Nil => Left("a command is required")
      // `./weir durable`, `./weir lab`: the name of a group of commands, as the launcher's own name is
      case "./weir" :: group
          if Main.commands.all.exists(c => c.words.size > group.size && c.words.startsWith(group)) =>
        Right(())
      case "./weir" :: args => Main.check(args)
      case other => Left(s"not a ./weir command: ${other.mkString(" ")}")
