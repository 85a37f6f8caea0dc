package weir.lab.durable

import cats.effect.ExitCode
import io.circe.parser.parse
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/**
 * The durable lab's kill run with the embedded server restarted mid-run, in a suite of its own so that the
 * build's test JVMs can share the lab's end-to-end runs (each starts a server of its own).
 */
class DurableRestartLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 5.minutes

  test(
    "--restart-every on the embedded server: restarted mid-run, workers killed too; nothing lost, keys in order, every repeat explained"
  ) {
    val run = LabJson.run(
      "durable-restart",
      List(
        "--only",
        "kill",
        "--tasks",
        "1000",
        "--limit",
        "16",
        "--keys",
        "10",
        "--kill-every",
        "1s",
        "--restart-every",
        "1s"
      )
    )
    run.map { (code, text) =>
      val c = parse(text).fold(e => fail(s"not JSON: $e"), identity).hcursor
      assertEquals(c.downField("settings").get[Long]("restart_every_ms"), Right(1000L), text)
      val kill = c.downField("records").downField("kill_run")
      val restarts = kill.get[Int]("restarts").getOrElse(fail(text))
      assert(restarts >= 1, text)
      assertEquals(kill.get[Vector[Double]]("restart_outage_ms").map(_.size), Right(restarts), text)
      assert(kill.get[Vector[Double]]("restart_outage_ms").exists(_.forall(_ > 0)), text)
      assertEquals(kill.get[Long]("lost"), Right(0L), text)
      assertEquals(kill.get[Long]("key_violations"), Right(0L), text)
      assertEquals(kill.get[Long]("unexplained_duplicates"), Right(0L), text)
      assert(kill.get[Long]("executions").exists(_ >= 1000L), text)
      assertEquals(c.downField("records").get[String]("status"), Right("ok"), text)
      assertEquals(code, ExitCode.Success)
    }
  }
