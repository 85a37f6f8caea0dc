package weir.lab.durable

import io.circe.Json
import io.circe.syntax.*
import weir.lab.report.ExperimentIo.number

/** The workflow run's rows of `./weir lab durable`'s table, its part of the JSON, and its failures. */
object WorkflowReport:

  private def ms(xs: Vector[Double]): String =
    if xs.isEmpty then "—" else f"${DurableReport.pct(xs, 0.5)}%.1f / ${DurableReport.pct(xs, 0.99)}%.1f ms"

  /** What breaks the run's promises, one line each (the first few tasks named). */
  def failures(w: WorkflowPhase.WorkflowRun): List[String] =
    val f = w.findings
    def some(what: String, xs: Vector[String]): Option[String] =
      Option.when(xs.nonEmpty)(s"${xs.size} $what: ${xs.take(3).mkString("; ")}")
    List(
      some("dependent run(s) started before a parent ended as asked", f.early),
      some("workflow task(s) lost (not ended as the graph says)", f.lost),
      some("cancel(s) without a parent that ended dead or cancelled", f.unexplainedCancels),
      some("callback(s) run again without a kill or restart to explain it", f.callbackDuplicates),
      some("callback(s) read counts other than their batch's", f.callbackCounts),
      Option.when(w.kills.size < w.minKills)(
        s"only ${w.kills.size} kill(s) landed in the workflow run, fewer than the ${w.minKills} asked"
      )
    ).flatten

  def rows(w: WorkflowPhase.WorkflowRun): Vector[Vector[String]] =
    val f = w.findings
    val z = w.sizes
    Vector(
      Vector(
        s"workflow: seed; tasks (fan-out 1 → ${z.fanOut} → 1, chain ${z.chain}, ${z.dags} graphs × ${z.dagTasks}, ${z.batches} batches × ${z.batchMembers})",
        s"${z.seed}; ${f.tasks}"
      ),
      Vector(
        "workflow: scenario times (fan-out, chain, dags, batches)",
        w.timings.map(t => f"${t.seconds}%.1f s" + (if t.stalled then " (stalled)" else "")).mkString(", ")
      ),
      Vector("workflow: workers killed; server restarts", s"${w.kills.size}; ${w.restarts.size}"),
      Vector("workflow: dependents started early", f.early.size.toString),
      Vector("workflow: tasks lost (not ended as the graph says)", f.lost.size.toString),
      Vector(
        "workflow: cascading cancels (without a cause)",
        s"${f.cancelled} (${f.unexplainedCancels.size})"
      ),
      Vector(
        "workflow: callbacks run of batches; duplicates; wrong counts",
        s"${f.callbacks} of ${z.batches}; ${f.callbackDuplicates.size}; ${f.callbackCounts.size}"
      ),
      Vector(
        "workflow: last parent's end → dependent's start p50 / p99 (all but fan-out's and callbacks)",
        ms(f.parentToChild)
      )
    ) ++ WorkflowCheck.kinds.filter(f.latencies.contains).map(k =>
      Vector(s"workflow:   $k, ${f.latencies(k).size} dependents, p50 / p99", ms(f.latencies(k)))
    ) ++ Vector(
      Vector(
        s"workflow: graph / independent tasks per s, ${w.timedTasks} tasks, median of ${w.rounds.size} (each round's)",
        w.graphOverIndependent.fold("—")(m =>
          f"$m%.2f× (" + w.rounds.map(r => f"${r.graph}%.0f / ${r.independent}%.0f").mkString(", ") + ")"
        )
      ),
      Vector(
        "workflow:   independent tasks kept once completed / independent, median (each round's)",
        w.keptOverIndependent.fold("—")(m =>
          f"$m%.2f× (" + w.rounds.map(r => f"${r.kept}%.0f / ${r.independent}%.0f").mkString(", ") + ")"
        )
      ),
      Vector(
        "workflow:   graph / independent tasks kept once completed, median (each round's)",
        w.graphOverKept.fold("—")(m =>
          f"$m%.2f× (" + w.rounds.map(r => f"${r.graph}%.0f / ${r.kept}%.0f").mkString(", ") + ")"
        )
      )
    )

  private def percentiles(xs: Vector[Double]): Json =
    Json.obj("p50" -> number(DurableReport.pct(xs, 0.5)), "p99" -> number(DurableReport.pct(xs, 0.99)))

  def json(w: WorkflowPhase.WorkflowRun): Json =
    val f = w.findings
    val z = w.sizes
    Json.obj(
      "seed" -> z.seed.asJson,
      "fan_out" -> z.fanOut.asJson,
      "chain" -> z.chain.asJson,
      "dags" -> z.dags.asJson,
      "dag_tasks" -> z.dagTasks.asJson,
      "batches" -> z.batches.asJson,
      "batch_members" -> z.batchMembers.asJson,
      "tasks" -> f.tasks.asJson,
      "scenario_seconds" -> Json.obj(w.timings.map(t => t.scenario.label -> number(t.seconds))*),
      "stalled" -> w.timings.filter(_.stalled).map(_.scenario.label).asJson,
      "kill_every_ms" -> w.killEvery.map(_.toMillis).asJson,
      "kills" -> w.kills.size.asJson,
      "min_kills" -> w.minKills.asJson,
      "restarts" -> w.restarts.size.asJson,
      "dependents_started_early" -> f.early.size.asJson,
      "lost" -> f.lost.size.asJson,
      "cascaded_cancels" -> f.cancelled.asJson,
      "unexplained_cancels" -> f.unexplainedCancels.size.asJson,
      "callbacks" -> f.callbacks.asJson,
      "callback_duplicates" -> f.callbackDuplicates.size.asJson,
      "callback_wrong_counts" -> f.callbackCounts.size.asJson,
      "parent_to_child_start_ms" -> percentiles(f.parentToChild),
      "parent_to_child_start_ms_by_kind" -> Json.obj(
        WorkflowCheck.kinds.filter(f.latencies.contains).map(k =>
          k -> percentiles(f.latencies(k)).deepMerge(Json.obj("n" -> f.latencies(k).size.asJson))
        )*
      ),
      "timed_tasks" -> w.timedTasks.asJson,
      "timed_rounds" -> w.rounds.map(r =>
        Json.obj(
          "independent_per_s" -> number(r.independent),
          "kept_per_s" -> number(r.kept),
          "graph_per_s" -> number(r.graph)
        )
      ).asJson,
      "graph_over_independent" -> w.graphOverIndependent.fold(Json.Null)(number),
      "kept_over_independent" -> w.keptOverIndependent.fold(Json.Null)(number),
      "graph_over_kept" -> w.graphOverKept.fold(Json.Null)(number),
      "failures" -> failures(w).asJson
    )
