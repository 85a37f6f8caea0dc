package weir.lab.durable

import cats.effect.{ExitCode, IO, Resource}
import io.circe.parser.parse
import munit.CatsEffectSuite
import weir.cli.CommandLine
import weir.lab.Stats

import java.nio.file.Files
import scala.concurrent.duration.*

class DurableLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 5.minutes

  test(
    "a small run on the embedded server: two worker JVMs, SIGKILLed mid-run; nothing lost, keys in order"
  ) {
    val settings = DurableLab.Settings(
      url = None,
      tasks = 1000,
      workers = 2,
      limit = 16,
      keys = 10,
      killEvery = Some(400.millis),
      quick = true,
      // the idle-latency phases' samples are measures, not checks: a few show that each phase runs and
      // reports them
      latencySamples = 10,
      latencyWarmup = 20
    )
    val run = IO.blocking(Files.createTempFile("durable-lab", ".json")).flatMap { file =>
      DurableLab.execute(settings.copy(json = Some(file)))
        .flatMap(r => IO.blocking(Files.readString(file)).map(text => (r, text)))
        .guarantee(IO.blocking(Files.deleteIfExists(file)).void)
    }
    run.map { (r, text) =>
      val k = r.killRun.getOrElse(fail("no kill run"))
      assert(k.kills.nonEmpty, k.toString)
      // every killed worker's session lock is freed by the server once its process is gone, and seen so
      assert(k.lockFreed.size == k.kills.size && k.lockFreed.forall(_.exists(_ >= 0)), k.toString)
      assertEquals(k.lost, 0L)
      assertEquals(k.keyViolations, 0L)
      assertEquals(k.unexplainedDuplicates, 0L)
      assertEquals(k.tasks, 1000)
      assert(k.executions >= 1000L, k.toString)
      assert(r.workedPerSecond.exists(_ > 0) && r.enqueue.exists(_.one > 0), r.toString)
      assertEquals(r.enqueue.flatMap(_.concurrent).map(_._1), Some(2))
      assertEquals(r.throughput.size, 1) // --quick: one round
      assertEquals(r.riverPerSecond, Left("not run (--river)"))
      assertEquals(r.ratio, None)
      assertEquals(r.history, None)
      assertEquals(r.idleNotify.size, 10)
      assertEquals(r.idlePoll.size, 10)
      assert(r.failures.isEmpty, r.failures.toString)

      val c = parse(text).fold(e => fail(s"not JSON: $e"), identity).hcursor
      assertEquals(c.get[String]("experiment"), Right("durable"))
      assertEquals(c.downField("settings").get[Int]("tasks"), Right(1000))
      assertEquals(c.downField("settings").get[Int]("workers"), Right(2))
      val records = c.downField("records")
      val kill = records.downField("kill_run")
      assertEquals(kill.get[Long]("lost"), Right(0L), text)
      assertEquals(kill.get[Long]("key_violations"), Right(0L), text)
      assertEquals(kill.get[Long]("unexplained_duplicates"), Right(0L), text)
      assertEquals(kill.get[Long]("false_rescues"), Right(k.falseRescues), text)
      assertEquals(kill.get[Int]("kills"), Right(k.kills.size), text)
      assertEquals(kill.get[Vector[Double]]("rerun_ms").map(_.size), Right(k.rerunMillis.size), text)
      assertEquals(
        kill.get[Vector[io.circe.Json]](
          "kill_details"
        ).map(_.map(_.hcursor.get[Double]("lock_freed_ms").toOption)),
        Right(k.lockFreed),
        text
      )
      assertEquals(records.get[String]("status"), Right("ok"), text)
      assert(records.downField("history").focus.exists(_.isNull), text)
      assertEquals(records.downField("enqueue_concurrent").get[Int]("enqueuers"), Right(2), text)
      assert(records.downField("enqueue_concurrent").get[Double]("per_s").exists(_ > 0), text)
      assertEquals(records.get[Vector[io.circe.Json]]("throughput_rounds").map(_.size), Right(1), text)
      assertEquals(records.get[Double]("worked_per_s").toOption, r.workedPerSecond, text)
    }
  }

  test("an unreachable --url ends the run with one line naming the phase and the cause, exit code 1") {
    val url = "postgresql://postgres:secret@127.0.0.1:1/postgres"
    val err = new java.io.ByteArrayOutputStream()
    val captured = Resource.make(IO {
      val before = System.err
      System.setErr(new java.io.PrintStream(err, true))
      before
    })(before => IO(System.setErr(before)))
    for
      code <- captured.surround(DurableLab.run(List("--url", url, "--only", "kill", "--tasks", "10")))
      failed <- DurableLab.execute(DurableLab.Settings(url = Some(url), tasks = 10)).attempt
    yield
      assertEquals(code, ExitCode(1))
      val lines = err.toString.linesIterator.toVector
      assertEquals(lines.size, 1, lines.mkString("\n"))
      assert(
        lines.head.startsWith("weir lab durable: the start phase failed: cannot reach the database"),
        lines.head
      )
      assert(lines.head.contains("127.0.0.1:1") && !lines.head.contains("secret"), lines.head)
      val e = failed.swap.getOrElse(fail("the run did not fail"))
      assert(e.isInstanceOf[DurableLab.PhaseFailed], e.toString)
      assertEquals(DurableLab.failureLine(e), lines.head)
  }

  test("bad options fail naming the value") {
    def bad(args: String*): String = CommandLine.parse(DurableLab.parser, args, DurableLab.Settings()) match
      case CommandLine.Parsed.Bad(error) => error
      case other => fail(s"expected a refusal of $args, got $other")
    assert(bad("--workers", "0").contains("--workers must be > 0, was: 0"))
    assert(bad("--kill-every", "nonsense").contains("given 'nonsense'"))
    assert(bad("--heartbeat", "2s", "--dead-after", "1s").contains("--dead-after must be longer"))
    assert(bad("--history", "0").contains("--history must be > 0, was: 0"))
    assert(bad("--history", "-5").contains("--history must be > 0, was: -5"))
    assert(bad("--history", "many").contains("many"))
    assert(bad("--only", "kill,nonsense").contains("was: nonsense"))
    assert(bad("--only", "history").contains("--only history needs --history N"))
    assert(bad("--rounds", "0").contains("--rounds must be > 0, was: 0"))
    assert(bad("--enqueuers", "-2").contains("--enqueuers must be > 0, was: -2"))
    assert(bad("--restart-every", "0s").contains("--restart-every must be > 0s, was: 0s"))
    assert(bad("--restart-every", "-5s").contains("Option --restart-every failed when given '-5s'"))
    assert(bad("--restart-every", "5").contains("Option --restart-every failed when given '5'"))
    val external = bad("--url", "postgresql://u:pw@db.example:5432/x", "--restart-every", "5s")
    assert(
      external.contains("--restart-every") && external.contains("cannot restart the server at") &&
        external.contains("db.example") && !external.contains("pw@"),
      external
    )
    assert(bad(
      "--restart-every",
      "5s",
      "--only",
      "throughput"
    ).contains("--restart-every restarts the server during the kill and workflow runs"))
    assert(bad("--seed", "x").contains("--seed"))
    DurableLab.run(List("--keys", "-1")).map(code => assertEquals(code, ExitCode(2)))
  }

  test("throughput rounds: medians of weir, of River and of each round's own ratio") {
    val rounds = Vector(
      Phases.Round(100, Right(50)),
      Phases.Round(90, Right(100)),
      Phases.Round(120, Right(60))
    )
    val r = DurableLab.Results(None, rounds, Vector.empty, Vector.empty, None, None)
    assertEquals(r.workedPerSecond, Some(100.0))
    assertEquals(r.riverPerSecond, Right(60.0))
    assertEquals(r.ratio, Some(2.0)) // ratios 2.0, 0.9, 2.0: not 100 / 60
    val failed = r.copy(throughput = rounds :+ Phases.Round(80, Left("River's benchmark exited 1")))
    assertEquals(failed.riverPerSecond, Left("River's benchmark exited 1"))
    assertEquals(failed.ratio, None)
    assertEquals(failed.workedPerSecond, Some(95.0))
    assert(Stats.of(Vector.empty).median.isNaN)
  }
