package weir.lab.durable

import cats.effect.ExitCode
import munit.CatsEffectSuite
import weir.lab.report.ExperimentIo

import scala.concurrent.duration.*

class DurableLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 5.minutes

  test("a small run on the embedded server: two worker JVMs, one SIGKILLed; nothing lost, keys in order") {
    val settings = DurableLab.Settings(
      url = None,
      tasks = 1500,
      workers = 2,
      limit = 16,
      keys = 10,
      killEvery = Some(1.second),
      quick = true
    )
    DurableLab.execute(settings).map { r =>
      val k = r.killRun
      assertEquals(k.lost, 0L)
      assertEquals(k.keyViolations, 0L)
      assertEquals(k.unexplainedDuplicates, 0L)
      assertEquals(k.tasks, 1500)
      assert(k.executions >= 1500L, k.toString)
      assert(r.workedPerSecond > 0 && r.enqueuePerSecond > 0, r.toString)
      assertEquals(r.idleNotify.size, 50)
      assert(r.failures.isEmpty, r.failures.toString)
    }
  }

  test("bad options fail naming the value") {
    def bad(args: String*): String = ExperimentIo.parse(DurableLab.parser, args, DurableLab.Settings()) match
      case ExperimentIo.Parsed.Bad(error) => error
      case other => fail(s"expected a refusal of $args, got $other")
    assert(bad("--workers", "0").contains("--workers must be > 0, was: 0"))
    assert(bad("--kill-every", "nonsense").contains("was: nonsense"))
    assert(bad("--heartbeat", "2s", "--dead-after", "1s").contains("--dead-after must be longer"))
    DurableLab.run(List("--keys", "-1")).map(code => assertEquals(code, ExitCode(2)))
  }
