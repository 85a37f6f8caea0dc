package weir.lab.durable

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.lab.durable.WorkflowCheck.{Ended, Run}
import weir.lab.durable.WorkflowPlan.{Edge, Node, Outcome, Part, Plan, Scenario}

/** The workflow run's plan and checks, without a server: each check fed records that break it. */
class WorkflowCheckSuite extends ScalaCheckSuite:

  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(30)

  private def sizes(seed: Long) =
    WorkflowPlan.Sizes(
      fanOut = 5,
      chain = 4,
      dags = 3,
      dagTasks = 30,
      batches = 2,
      batchMembers = 12,
      seed = seed
    )

  /**
   * The records of a faithful run of `plan`: each task that runs starts 1 ms after its last parent's end
   * (a callback after its last member's) and ends 1 ms later, on worker 1; a cancelled task ends when the
   * parent that cancels it does; each task's `finished` row says how the plan has it end.
   */
  private def faithful(plan: Plan): (Vector[Ended], Vector[Run]) =
    val ends = scala.collection.mutable.Map.empty[Int, Double]
    val runs = Vector.newBuilder[Run]
    def parentsEnd(edges: Vector[Edge]): Double = edges.map(e => ends(e.parent)).maxOption.getOrElse(0.0)
    plan.nodes.foreach { n =>
      val after = parentsEnd(n.parents)
      if plan.expected(n.key) == Outcome.Cancelled then ends(n.key) = after
      else
        runs += Run(n.key, n.key.toLong, 1, after + 1, None)
        ends(n.key) = after + 2
    }
    plan.batches.foreach { b =>
      val after = parentsEnd(b.nodes.map(n => Edge(n.key, anyOutcome = true)))
      runs += Run(b.callback, b.callback.toLong, 1, after + 1, Some(plan.callbackCounts(b.callback)))
      ends(b.callback) = after + 2
    }
    val ended = plan.expected.toVector.map((k, o) => Ended(k, k.toLong, o.state, ends(k)))
    (ended, runs.result())

  private val seeds = Gen.choose(Long.MinValue, Long.MaxValue)

  property(
    "a plan: unique keys, every edge to an earlier task of its own part, each scenario as large as asked"
  ) {
    Prop.forAll(seeds) { seed =>
      val plan = WorkflowPlan.of(sizes(seed))
      val keys = plan.nodes.map(_.key) ++ plan.batches.map(_.callback)
      assertEquals(keys.distinct.size, keys.size)
      plan.units.foreach((_, parts) =>
        parts.foreach { part =>
          val order = part.nodes.map(_.key).zipWithIndex.toMap
          part.nodes.foreach(n =>
            n.parents.foreach(e => assert(order.get(e.parent).exists(_ < order(n.key)), s"$n in $part"))
          )
        }
      )
      val count = plan.nodes.groupBy(_.scenario).view.mapValues(_.size).toMap
      assertEquals(count(Scenario.FanOut), 5 + 2)
      assertEquals(count(Scenario.Chain), 4)
      assertEquals(count(Scenario.Dag), 3 * 30)
      assertEquals(count(Scenario.Batch), 2 * 12)
      assert(plan.batches.forall(_.callback >= LabWorker.callbackBase))
      // the failing first task of each batch's graph cancels at least that dependent of it which needs it
      assert(plan.batches.forall(b => plan.expected(b.graph.head.key) == Outcome.Dead))
    }
  }

  property("a faithful run's records break no check, for any plan") {
    Prop.forAll(seeds) { seed =>
      val plan = WorkflowPlan.of(sizes(seed))
      val (ended, runs) = faithful(plan)
      val f = WorkflowCheck(plan, ended, runs, Vector.empty, Vector.empty)
      assertEquals(f.lost, Vector.empty)
      assertEquals(f.early, Vector.empty)
      assertEquals(f.unexplainedCancels, Vector.empty)
      assertEquals(f.callbackDuplicates, Vector.empty)
      assertEquals(f.callbackCounts, Vector.empty)
      assertEquals(f.callbacks, 2L)
      assertEquals(f.cancelled, plan.expected.values.count(_ == Outcome.Cancelled).toLong)
      assert(f.latencies.values.flatten.forall(_ == 1.0), f.latencies.toString)
      assertEquals(f.latencies.get(WorkflowCheck.fanOutKind).map(_.size), Some(5))
      assertEquals(f.latencies.get(WorkflowCheck.fanInKind).map(_.size), Some(1))
    }
  }

  // a → b (b needs a completed), a → c (c runs however a ends), b → d; a batch of {a, b}, its callback 1000000005
  private val a = Node(1, Scenario.Dag, Vector.empty, fails = false)
  private val b = Node(2, Scenario.Dag, Vector(Edge(1, false)), fails = false)
  private val c = Node(3, Scenario.Dag, Vector(Edge(1, true)), fails = false)
  private val d = Node(4, Scenario.Dag, Vector(Edge(2, false)), fails = false)
  private val callback = LabWorker.callbackBase + 5
  private val small = Plan(Vector(
    Scenario.Batch -> Vector(Part.Batch(callback, Vector.empty, Vector(a, b))),
    Scenario.Dag -> Vector(Part.Graph(Vector(c, d)))
  ))

  test("the expected ends: a parent's dead end cancels what needs it completed, level by level") {
    val failing = Vector(a.copy(fails = true), b, c, d)
    assertEquals(
      WorkflowPlan.expected(failing),
      Map(1 -> Outcome.Dead, 2 -> Outcome.Cancelled, 3 -> Outcome.Completed, 4 -> Outcome.Cancelled)
    )
    assertEquals(WorkflowPlan.expected(Vector(a, b, c, d)).values.toSet, Set(Outcome.Completed))
  }

  private val clean = (
    Vector(
      Ended(1, 11, "completed", 10),
      Ended(2, 12, "completed", 20),
      Ended(3, 13, "completed", 20),
      Ended(4, 14, "completed", 30),
      Ended(callback, 15, "completed", 40)
    ),
    Vector(
      Run(1, 11, 1, 5, None),
      Run(2, 12, 1, 15, None),
      Run(3, 13, 2, 12, None),
      Run(4, 14, 2, 25, None),
      Run(callback, 15, 1, 35, Some((2L, 0L, 0L)))
    )
  )

  test("hand-made records of a clean run: nothing found, and each dependent's latency") {
    val f = WorkflowCheck(small, clean._1, clean._2, Vector.empty, Vector.empty)
    assertEquals(
      (f.lost, f.early, f.unexplainedCancels, f.callbackDuplicates, f.callbackCounts),
      (Vector.empty, Vector.empty, Vector.empty, Vector.empty, Vector.empty)
    )
    assertEquals(f.callbacks, 1L)
    // b and d start 5 ms after their parent's end, c 2 ms; the callback 15 ms after its last member's
    assertEquals(
      f.latencies.view.mapValues(_.sorted).toMap,
      Map("dag" -> Vector(2.0, 5.0, 5.0), "callback" -> Vector(15.0))
    )
    assertEquals(f.parentToChild.sorted, Vector(2.0, 5.0, 5.0))
  }

  test("an early start is found: a dependent started before its parent ended") {
    val runs = clean._2.map(r => if r.key == 4 then r.copy(atMillis = 19) else r)
    val f = WorkflowCheck(small, clean._1, runs, Vector.empty, Vector.empty)
    assertEquals(f.early.size, 1, f.early)
    assert(f.early.head.startsWith("task 4 (id 14) started at 19.0, before task 2 ended at 20.0"), f.early)
  }

  test("an early start is found: a dependent ran though the parent it needs completed ended dead") {
    val ended = clean._1.map(e => if e.key == 2 then e.copy(state = "dead") else e)
    val f = WorkflowCheck(small, ended, clean._2, Vector.empty, Vector.empty)
    assert(
      f.early.exists(
        _.contains("task 4 (id 14) started though task 2, which it needs completed, ended dead")
      ),
      f.early
    )
    // and task 2, expected completed, ended dead: lost too
    assert(f.lost.contains("task 2 (id 12) ended dead, expected completed"), f.lost)
  }

  test("a callback started before its last member ended is an early start") {
    val runs = clean._2.map(r => if r.key == callback then r.copy(atMillis = 18) else r)
    val f = WorkflowCheck(small, clean._1, runs, Vector.empty, Vector.empty)
    assertEquals(f.early, Vector(s"task $callback (id 15) started at 18.0, before task 2 ended at 20.0"))
  }

  test(
    "a lost task is found: one that never ended, one ended twice, one ended otherwise than the graph says"
  ) {
    val ended =
      clean._1.filterNot(_.key == 3).map(e => if e.key == 4 then e.copy(state = "cancelled") else e) :+
        Ended(1, 99, "completed", 12)
    val f = WorkflowCheck(small, ended, clean._2, Vector.empty, Vector.empty)
    assertEquals(
      f.lost,
      Vector(
        "task 1 ended 2 times (ids 11, 99)",
        "task 3 never ended (expected completed)",
        "task 4 (id 14) ended cancelled, expected completed"
      )
    )
    // task 4 was cancelled though its parent completed
    assertEquals(
      f.unexplainedCancels,
      Vector("task 4 ended cancelled though no parent it needs completed ended dead or cancelled")
    )
  }

  test("a duplicate callback is found unless a kill or a restart explains it") {
    val again = clean._2 :+ Run(callback, 15, 1, 45, Some((2L, 0L, 0L)))
    val f = WorkflowCheck(small, clean._1, again, Vector.empty, Vector.empty)
    assertEquals(f.callbackDuplicates.size, 1, f.callbackDuplicates)
    assert(f.callbackDuplicates.head.startsWith(
      s"task $callback: run on worker 1 at 35.0, again on worker 1 at 45.0"
    ))
    assertEquals(f.callbacks, 1L)
    val killed = Vector(KillPhase.Kill(workerId = 1, atMillis = 40, sessionHeld = true, othersAlive = 1))
    assertEquals(WorkflowCheck(small, clean._1, again, killed, Vector.empty).callbackDuplicates, Vector.empty)
    val restarted = Vector(KillPhase.Restart(downMillis = 38, upMillis = 39))
    assertEquals(
      WorkflowCheck(small, clean._1, again, Vector.empty, restarted).callbackDuplicates,
      Vector.empty
    )
  }

  test("a callback that read other counts than its batch's is found") {
    val runs = clean._2.map(r => if r.key == callback then r.copy(counts = Some((1L, 1L, 0L))) else r)
    val f = WorkflowCheck(small, clean._1, runs, Vector.empty, Vector.empty)
    assertEquals(
      f.callbackCounts,
      Vector(s"callback $callback read (completed, dead, cancelled) = (1,1,0), expected (2,0,0)")
    )
  }

  test("the run's failures list each broken promise, and too few kills on the full setting") {
    val runs = clean._2.map(r => if r.key == 4 then r.copy(atMillis = 19) else r)
    val findings =
      WorkflowCheck(small, clean._1.filterNot(_.key == 3), runs :+ runs.last, Vector.empty, Vector.empty)
    val run = WorkflowPhase.WorkflowRun(
      sizes(1),
      findings,
      kills = Vector.empty,
      restarts = Vector.empty,
      timings = Vector.empty,
      timedTasks = 10,
      rounds =
        Vector(
          GraphRounds.Round(100, 90, 80),
          GraphRounds.Round(100, 95, 90),
          GraphRounds.Round(100, 85, 40)
        ),
      minKills = 3
    )
    val failures = WorkflowReport.failures(run)
    assertEquals(failures.size, 4, failures)
    assert(
      failures.exists(_.startsWith("1 dependent run(s) started before a parent ended as asked")),
      failures
    )
    assert(failures.exists(_.startsWith("1 workflow task(s) lost")), failures)
    assert(failures.exists(_.startsWith("1 callback(s) run again")), failures)
    assert(failures.contains("only 0 kill(s) landed in the workflow run, fewer than the 3 asked"), failures)
    assertEquals(run.graphOverIndependent, Some(0.8))
    assertEquals(
      WorkflowReport.failures(run.copy(
        findings = WorkflowCheck(small, clean._1, clean._2, Vector.empty, Vector.empty),
        minKills = 0
      )),
      Nil
    )
  }
