package weir.runtime.hang

import cats.effect.IO
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/**
 * Liveness checks for typelevel/cats-effect#4674 (see [[weir.runtime.WeirRuntime]]), each in child JVMs
 * running [[HangProbe]]: a wedged runtime cannot be recovered from inside its own JVM, so the probe watches
 * its runs from a plain thread, and this suite kills a child that outlives a hard deadline.
 *
 *   - The default runtime must be seen to wedge: that proves the detector can see a wedge, so the checks
 *     on the weir runtime mean something. If Cats Effect fixes the bug this test fails and says so; then
 *     see `WeirRuntime`'s "When this can go".
 *   - The weir runtime must finish every run of every shape.
 *
 * About a minute of wall time on 2 cores. A longer soak, outside the build:
 * {{{
 * java --sun-misc-unsafe-memory-access=allow -cp <test classpath> \
 *   weir.runtime.hang.HangProbe weir queue 10000 5000
 * }}}
 */
class HangDetectorSuite extends CatsEffectSuite:

  import HangDetectorSuite.*

  // a backstop only: every child JVM has its own hard deadline, well inside this
  override def munitIOTimeout: Duration = 4.minutes

  test("the detector sees the default runtime wedge under mass 1 ms wake-ups (cats-effect#4674)") {
    def attempt(jvm: Int, history: Vector[String]): IO[(Option[Verdict.Wedged], Vector[String])] =
      if jvm > DefaultJvms then IO.pure((None, history))
      else
        probe("default", "queue", DefaultRuns, PerRunTimeout, DefaultHardDeadline).flatMap {
          case wedged: Verdict.Wedged => IO.pure((Some(wedged), history :+ s"JVM $jvm: $wedged"))
          case ok: Verdict.Ok => attempt(jvm + 1, history :+ s"JVM $jvm: $ok")
          case broken: Verdict.Broken =>
            IO.raiseError(new AssertionError(s"default runtime, JVM $jvm: $broken"))
        }
    attempt(1, Vector.empty).map { (wedged, history) =>
      report(s"default/queue ($DefaultJvms JVMs x $DefaultRuns runs at most)", history)
      assert(
        wedged.isDefined,
        s"the default runtime did not wedge in $DefaultJvms JVMs x $DefaultRuns runs of $shapeText " +
          s"(per-run timeout $PerRunTimeout): ${history.mkString("; ")}. Either Cats Effect fixed " +
          "typelevel/cats-effect#4674 (then WeirRuntime can go: see its Scaladoc and docs/adr/0003-safe-runtime.md) " +
          "or the detector no longer detects."
      )
    }
  }

  List("queue", "semaphore", "weir").foreach { shape =>
    test(s"the weir runtime finishes $WeirRuns back-to-back runs of the $shape shape without a wedge") {
      probe("weir", shape, WeirRuns, WeirPerRunTimeout, WeirHardDeadline).map { verdict =>
        report(s"weir/$shape", Vector(verdict.toString))
        verdict match
          case Verdict.Ok(runs, _) => assertEquals(runs, WeirRuns)
          case other => fail(s"weir runtime, $shape shape: $other")
      }
    }
  }

  test("the probe rejects bad arguments with exit code 2") {
    launch(List("weir", "queue", "0", "5000"), 30.seconds).map { result =>
      assertEquals(result.exitCode, Some(2), result.toString)
      assert(result.err.exists(_.startsWith("bad arguments: weir queue 0 5000")), result.toString)
    }
  }

object HangDetectorSuite:

  // The shape of issue 8: 1000 sleepers of 1 ms, 10,000 tasks a run. The default runtime wedged at
  // run 6 to 20 of this shape on a 2-core machine, so 4 JVMs x 60 runs leave a wide margin.
  val DefaultJvms: Int = 4
  val DefaultRuns: Int = 60
  val WeirRuns: Int = 60
  val PerRunTimeout: FiniteDuration = 5.seconds
  // A wedge never ends, so a longer per-run deadline loses nothing in the weir checks, and keeps a cold,
  // starved first run on a loaded machine (seen: over 5 s at load average 28) from passing for a wedge.
  val WeirPerRunTimeout: FiniteDuration = 20.seconds
  // a healthy run takes 40-300 ms here; these only catch a probe that failed to detect its own wedge
  val DefaultHardDeadline: FiniteDuration = 75.seconds
  val WeirHardDeadline: FiniteDuration = 150.seconds

  val shapeText: String = s"${HangProbe.Workers} workers x ${HangProbe.Tasks} tasks of IO.sleep(1.milli)"

  /** What one child JVM reported. */
  enum Verdict:
    case Ok(runs: Int, millis: Long)

    /** `spinning` is the top frame of each compute thread that was running when the run missed its deadline. */
    case Wedged(run: Int, spinning: List[String])

    /** Failed, crashed, killed at the hard deadline, or said something unexpected. */
    case Broken(description: String)

  final case class ChildResult(exitCode: Option[Int], out: List[String], err: List[String]):
    def progress: Int = err.count(_.matches("run=\\d+ ok .*"))
    override def toString: String =
      s"exit=${exitCode.fold("killed")(_.toString)}, stdout=${out.mkString(" | ")}, " +
        s"runs finished=$progress, stderr tail=${err.filterNot(_.startsWith("STACK")).takeRight(3).mkString(" | ")}"

  private val OkLine = """OK runs=(\d+) ms=(\d+)""".r
  private val WedgedLine = """WEDGED run=(\d+)""".r

  def verdict(result: ChildResult): Verdict =
    (result.exitCode, result.out.lastOption) match
      case (Some(0), Some(OkLine(runs, ms))) => Verdict.Ok(runs.toInt, ms.toLong)
      case (Some(3), Some(WedgedLine(run))) =>
        val tops = result.err.sliding(2).collect {
          case List(header, frame) if header.startsWith("STACK io-") && frame.startsWith("STACK   at ") =>
            frame.stripPrefix("STACK   at ")
        }
        Verdict.Wedged(run.toInt, tops.toList)
      case _ => Verdict.Broken(result.toString)

  /** Runs [[HangProbe]] in a child JVM and reads its verdict. */
  def probe(
      runtime: String,
      shape: String,
      runs: Int,
      perRun: FiniteDuration,
      hardDeadline: FiniteDuration
  ): IO[Verdict] =
    launch(List(runtime, shape, runs.toString, perRun.toMillis.toString), hardDeadline).map(verdict)

  /** Runs [[HangProbe]] with `args` in a child JVM, killed at `hardDeadline`. */
  def launch(args: List[String], hardDeadline: FiniteDuration): IO[ChildResult] =
    ChildJvm.run("weir.runtime.hang.HangProbe", Nil, args, hardDeadline).map(r =>
      ChildResult(r.exitCode, r.out, r.err)
    )

  private def report(what: String, lines: Vector[String]): Unit =
    lines.foreach(line => println(s"[HangDetector] $what: $line"))
