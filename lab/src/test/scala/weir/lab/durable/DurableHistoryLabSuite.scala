package weir.lab.durable

import cats.effect.ExitCode
import io.circe.parser.parse
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/**
 * The durable lab's history phase, in a suite of its own so that the build's test JVMs can share the lab's
 * end-to-end runs (each starts a server of its own).
 */
class DurableHistoryLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 5.minutes

  test("--only history: claim time measured at every history size, with the ratio largest / empty") {
    val settings = DurableLab.Settings(url = None, tasks = 500, history = Some(20000L))
    val run = LabJson.run(
      "durable-history",
      List(
        "--tasks",
        "500",
        "--history",
        "20000",
        "--only",
        "history"
      )
    )
    run.map { (code, text) =>
      assertEquals(code, ExitCode.Success)
      assert(settings.runs(DurableLab.Phase.History) &&
        !settings.copy(only = Some(Set.empty)).runs(DurableLab.Phase.History))
      val c = parse(text).fold(e => fail(s"not JSON: $e"), identity).hcursor
      assertEquals(c.downField("settings").get[Long]("history"), Right(20000L), text)
      assertEquals(c.downField("settings").get[Vector[String]]("phases"), Right(Vector("history")), text)
      val records = c.downField("records")
      assert(records.downField("kill_run").focus.exists(_.isNull), text)
      assert(records.downField("enqueue_per_s").focus.exists(_.isNull), text)
      val h = records.downField("history")
      assertEquals(h.get[Int]("backlog"), Right(500), text)
      val sizes = h.downField("sizes").values.getOrElse(fail(text)).toVector.map(_.hcursor)
      val rows = sizes.map(_.get[Long]("finished_rows").getOrElse(fail(text)))
      assertEquals(rows, HistoryPhase.sizes(20000L), text)
      sizes.foreach { z =>
        val claims = z.get[Int]("claims").getOrElse(fail(text))
        val p50 = z.downField("claim_ms").get[Double]("p50").getOrElse(fail(text))
        val p99 = z.downField("claim_ms").get[Double]("p99").getOrElse(fail(text))
        assert(claims > 0 && p50 > 0 && p99 >= p50, z.focus.toString)
        assert(z.get[Double]("worked_per_s").exists(_ > 0), z.focus.toString)
        assert(z.get[Long]("finished_bytes").exists(_ > 0), z.focus.toString)
      }
      assert(h.get[Double]("claim_p50_ratio").exists(_ > 0), text)
      assert(h.get[Double]("claim_p99_ratio").exists(_ > 0), text)
      assertEquals(records.get[String]("status"), Right("ok"), text)
    }
  }
