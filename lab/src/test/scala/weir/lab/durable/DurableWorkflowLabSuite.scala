package weir.lab.durable

import cats.effect.ExitCode
import io.circe.parser.parse
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/** The durable lab's workflow phase, in a suite of its own so that two test JVMs can share the lab's runs. */
class DurableWorkflowLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 5.minutes

  test(
    "--only workflow --quick: graphs and batches on worker JVMs SIGKILLed, the server restarted; no early start, nothing lost, one callback per batch"
  ) {
    val run = LabJson.run(
      "durable-workflow",
      List(
        "--only",
        "workflow",
        "--quick",
        "--tasks",
        "4000",
        "--seed",
        "42",
        "--limit",
        "16",
        "--kill-every",
        "500ms",
        "--restart-every",
        "1s"
      )
    )
    run.map { (code, text) =>
      val c = parse(text).fold(e => fail(s"not JSON: $e"), identity).hcursor
      assertEquals(c.downField("settings").get[Vector[String]]("phases"), Right(Vector("workflow")), text)
      val w = c.downField("records").downField("workflow")
      assertEquals(w.get[Long]("seed"), Right(42L), text)
      // 4,000 tasks: a 1 → 200 → 1 fan-out, a chain of 20, 2 graphs of 10, 2 batches of 10
      val plan = WorkflowPlan.of(DurableLab.Settings(tasks = 4000, quick = true).workflowSizes(42L))
      assertEquals(w.get[Int]("tasks"), Right(plan.expected.size), text)
      // the kills and restarts land while the scenarios run: the killer and the restarter stop with them
      assert(w.get[Int]("kills").exists(_ >= 1), text)
      assert(w.get[Int]("restarts").exists(_ >= 1), text)
      assertEquals(w.get[Int]("dependents_started_early"), Right(0), text)
      assertEquals(w.get[Int]("lost"), Right(0), text)
      assertEquals(w.get[Int]("unexplained_cancels"), Right(0), text)
      assertEquals(
        w.get[Long]("cascaded_cancels"),
        Right(plan.expected.values.count(_ == WorkflowPlan.Outcome.Cancelled).toLong),
        text
      )
      assertEquals(w.get[Long]("callbacks"), Right(plan.batches.size.toLong), text)
      assertEquals(w.get[Int]("callback_duplicates"), Right(0), text)
      assertEquals(w.get[Int]("callback_wrong_counts"), Right(0), text)
      assert(w.downField("parent_to_child_start_ms").get[Double]("p50").exists(_ > 0), text)
      assertEquals(
        w.downField("parent_to_child_start_ms_by_kind").downField("chain").get[Int]("n"),
        Right(19),
        text
      )
      assertEquals(w.get[Vector[io.circe.Json]]("timed_rounds").map(_.size), Right(1), text)
      assert(w.get[Double]("graph_over_independent").exists(_ > 0), text)
      assert(w.get[Double]("kept_over_independent").exists(_ > 0), text)
      assert(w.get[Double]("graph_over_kept").exists(_ > 0), text)
      assert(
        w.downField("timed_rounds").downN(0).get[Double]("kept_per_s").exists(_ > 0),
        text
      )
      assertEquals(w.get[Vector[String]]("stalled"), Right(Vector.empty), text)
      assertEquals(c.downField("records").get[String]("status"), Right("ok"), text)
      assertEquals(code, ExitCode.Success)
    }
  }
