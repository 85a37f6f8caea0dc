package weir.lab.durable

import io.circe.Json
import io.circe.syntax.*
import weir.cli.{Durations, Table}
import weir.lab.report.ExperimentIo
import weir.lab.report.ExperimentIo.number

/** What `./weir lab durable` prints (its table) and writes (`--json`, its format in docs/lab/durable.md). */
object DurableReport:

  private[durable] def pct(xs: Vector[Double], p: Double): Double =
    if xs.isEmpty then Double.NaN
    else
      val sorted = xs.sorted
      sorted(((p * sorted.size).ceil.toInt - 1).max(0).min(sorted.size - 1))

  private def latency(xs: Vector[Double]): String = f"${pct(xs, 0.5)}%.2f / ${pct(xs, 0.99)}%.2f ms"

  private def meanMax(ms: Vector[Double]): String =
    if ms.isEmpty then "—" else f"${ms.sum / ms.size}%.0f / ${ms.max}%.0f ms"

  def table(s: DurableLab.Settings, r: DurableLab.Results): String =
    val enqueue = r.enqueue.toVector.flatMap(e =>
      Vector("enqueue (batches of 10,000), one enqueuer" -> e.one) ++
        e.concurrent.map((n, c) => s"enqueue (batches of 10,000), $n enqueuers at once" -> c)
    ).map((what, rate) => Vector(what, f"$rate%.0f tasks/s"))
    val rounds = r.throughput.size
    val throughput = r.workedPerSecond.toVector.flatMap(w =>
      Vector(
        Vector(
          s"no-op tasks worked (${s.throughputWorkers} process(es)), median of $rounds",
          f"$w%.0f tasks/s"
        ),
        Vector(
          s"River's benchmark, same server, median of $rounds",
          r.riverPerSecond.fold(identity, d => f"$d%.0f jobs/s")
        ),
        Vector(
          "weir / River, median of the rounds' ratios (each round's range)",
          r.ratio.fold("—")(m =>
            val each = r.throughput.flatMap(x => x.river.toOption.map(x.worked / _))
            f"$m%.2f× (${each.min}%.2f–${each.max}%.2f×)"
          )
        )
      )
    )
    val idle =
      if r.idleNotify.isEmpty then Vector.empty
      else
        Vector(
          Vector("idle, NOTIFY: enqueue call→start p50 / p99", latency(r.idleNotify.map(_.fromCall))),
          Vector("idle, NOTIFY: enqueue commit→start p50 / p99", latency(r.idleNotify.map(_.fromCommit))),
          Vector("idle, poll 100 ms: enqueue commit→start p50 / p99", latency(r.idlePoll.map(_.fromCommit)))
        )
    val kill = r.killRun.toVector.flatMap(k =>
      Vector(
        Vector(s"kill run: tasks worked (recording each)", f"${k.tasksPerSecond}%.0f tasks/s"),
        Vector(
          "kill run: enqueue→start under backlog p50 / p99",
          f"${k.backlogP50Ms}%.0f / ${k.backlogP99Ms}%.0f ms"
        ),
        Vector("kill run: workers killed", k.kills.size.toString)
      ) ++ Option.when(s.restartEvery.isDefined || k.restarts.nonEmpty)(
        Vector(
          s"kill run: server restarts${s.restartEvery.fold("")(d => s" (every ${Durations.show(d)})")}; stop → answering again, mean / max",
          s"${k.restarts.size}; ${meanMax(k.restarts.map(_.outageMillis))}"
        )
      ) ++ Vector(
        Vector(
          s"kill run: kill → tasks rescued, mean / max (heartbeat ${s.heartbeat.toMillis} ms, deadAfter ${s.deadAfter.toMillis} ms)",
          meanMax(k.rescueMillis)
        ),
        Vector(
          "kill run: rescues that found the worker dead by its ended session (the others: deadAfter)",
          s"${k.rescuedBySession} of ${k.rescueMillis.size}"
        ),
        Vector(
          "kill run: kills of a worker whose session held its lock, another worker's session alive; their rescues mean / max", {
            val fair =
              k.kills.zip(k.rescueOfKill).filter((kill, _) => kill.sessionHeld && kill.othersAlive > 0)
            s"${fair.size} of ${k.kills.size}; ${meanMax(fair.flatMap(_._2).map(_._1))}"
          }
        ),
        Vector(
          "kill run: kill → its session lock first seen freed, mean / max (kills where it was seen)",
          s"${meanMax(k.lockFreed.flatten)} (${k.lockFreed.flatten.size} of ${k.kills.size})"
        ),
        Vector("kill run: kill → first re-run of a task it held, mean / max", meanMax(k.rerunMillis)),
        Vector(
          "kill run: live workers taken for dead (rescued before any kill, no restart to explain it)",
          k.falseRescues.toString
        ),
        Vector(
          "kill run: live workers rescued after a restart ended their sessions",
          k.restartRescues.toString
        ),
        Vector("kill run: lost tasks", k.lost.toString),
        Vector(
          "kill run: tasks run twice (each repeat after its worker's kill or a restart?)",
          s"${k.duplicates} (${
              if k.unexplainedDuplicates == 0 then "yes" else s"no: ${k.unexplainedDuplicates}"
            }; ${k.repeatsAfterRestart} repeat(s) explained by a restart alone)"
        ),
        Vector("kill run: keys out of order", k.keyViolations.toString)
      )
    )
    val control = r.control.toVector.flatMap(c =>
      Vector(
        Vector(
          "control: pause call → last claim (4 workers); the call itself",
          f"${c.pauseToLastClaimMillis}%.1f ms; ${c.pauseCallMillis}%.1f ms"
        ),
        Vector("control: claims after 2 s paused", c.claimsAfterQuiet.toString),
        Vector(
          s"control: most running seen under a queue limit of ${c.globalLimit} (${c.limitSamples} samples)",
          c.maxRunningSeen.toString
        ),
        Vector(
          f"control: rate seen / asked over ${c.rateWindow.toSeconds} s",
          f"${c.rateSeen}%.1f / ${c.rateAsked}%.0f per s (${(c.rateSeen / c.rateAsked - 1) * 100}%+.1f%%)"
        ),
        Vector(
          "control: ticks of a 100 ms schedule from 4 schedulers; duplicates; gaps",
          s"${c.scheduleTicks}; ${c.scheduleDuplicates}; ${c.scheduleGaps}"
        ),
        Vector(
          "control: revoked claims started (of a worker taken for dead); refused",
          s"${c.revokedStarted}; ${c.revokedRefused}"
        ),
        Vector(
          s"control: cancel call → handler interrupted, ${c.cancels} cancels: p50; p99; max",
          f"${c.cancelQuantile(0.5)}%.1f; ${c.cancelQuantile(0.99)}%.1f; ${c.cancelQuantile(1.0)}%.1f ms"
        ),
        Vector("control: cancelled tasks in finished", s"${c.cancelledSeen} of ${c.cancels}")
      )
    )
    val rows = enqueue ++ throughput ++ idle ++ kill ++ control ++
      r.workflow.toVector.flatMap(WorkflowReport.rows)
    val main = if rows.isEmpty then ""
    else "\n" + Table.grid(Vector("measure", "value") +: rows, rightAligned = Set(1))
    main + r.history.fold("")(h => "\n" + historyTable(h))

  /** One row per history size, then the largest size's claim times over the empty history's. */
  def historyTable(h: HistoryPhase.History): String =
    val rows = h.sizes.map(z =>
      Vector(
        f"${z.finishedRows}%,d",
        f"${z.finishedBytes / 1e6}%.0f MB",
        z.claimMillis.size.toString,
        f"${z.p50}%.2f / ${z.p99}%.2f ms",
        f"${z.workedPerSecond}%.0f tasks/s",
        f"${z.fillSeconds}%.1f s"
      )
    )
    Table.grid(
      Vector(
        "finished rows",
        "on disk",
        s"claims of ${HistoryPhase.claimBatch}",
        "claim p50 / p99",
        "no-op worked",
        "fill"
      ) +:
        rows,
      rightAligned = Set(0, 1, 2, 3, 4, 5)
    ) + f"\nlargest / empty history: claim p50 ${h.ratio(_.p50)}%.2f×, p99 ${h.ratio(_.p99)}%.2f×, " +
      f"worked ${h.ratio(_.workedPerSecond)}%.2f× (backlog ${h.backlog}%,d tasks per size)"

  private def percentiles(xs: Vector[Double]): Json =
    Json.obj("p50" -> number(pct(xs, 0.5)), "p99" -> number(pct(xs, 0.99)))

  def json(s: DurableLab.Settings, r: DurableLab.Results): Json =
    Json.obj(
      "experiment" -> "durable".asJson,
      "environment" -> ExperimentIo.environment,
      "settings" -> Json.obj(
        "tasks" -> s.n.asJson,
        "workers" -> s.workers.asJson,
        "throughput_workers" -> s.throughputWorkers.asJson,
        "throughput_rounds" -> s.throughputRounds.asJson,
        "enqueuers" -> s.enqueuers.asJson,
        "limit" -> s.limit.asJson,
        "keys" -> s.keys.asJson,
        "kill_every_ms" -> s.kills.map(_.toMillis).asJson,
        "restart_every_ms" -> s.restartEvery.map(_.toMillis).asJson,
        "heartbeat_ms" -> s.heartbeat.toMillis.asJson,
        "dead_after_ms" -> s.deadAfter.toMillis.asJson,
        "history" -> s.history.asJson,
        "phases" -> DurableLab.Phase.values.filter(s.runs).map(_.label).toVector.asJson,
        "server" -> (if s.url.isEmpty then "embedded" else "url").asJson
      ),
      "records" -> Json.obj(
        "enqueue_per_s" -> r.enqueue.fold(Json.Null)(e => number(e.one)),
        "enqueue_concurrent" -> r.enqueue.flatMap(_.concurrent).fold(Json.Null)((n, c) =>
          Json.obj("enqueuers" -> n.asJson, "per_s" -> number(c))
        ),
        "worked_per_s" -> r.workedPerSecond.fold(Json.Null)(number),
        "river_per_s" -> r.riverPerSecond.toOption.fold(Json.Null)(number),
        "river_status" -> r.riverPerSecond.fold(identity, _ => "ok").asJson,
        "weir_over_river" -> r.ratio.fold(Json.Null)(number),
        "throughput_rounds" -> r.throughput.map(x =>
          Json.obj(
            "worked_per_s" -> number(x.worked),
            "river_per_s" -> x.river.toOption.fold(Json.Null)(number)
          )
        ).asJson,
        "idle_notify_from_call_ms" -> percentiles(r.idleNotify.map(_.fromCall)),
        "idle_notify_from_commit_ms" -> percentiles(r.idleNotify.map(_.fromCommit)),
        "idle_poll_from_commit_ms" -> percentiles(r.idlePoll.map(_.fromCommit)),
        "kill_run" -> r.killRun.fold(Json.Null)(k =>
          Json.obj(
            "worked_per_s" -> number(k.tasksPerSecond),
            "backlog_start_ms" -> Json.obj("p50" -> number(k.backlogP50Ms), "p99" -> number(k.backlogP99Ms)),
            "kills" -> k.kills.size.asJson,
            "rescue_ms" -> k.rescueMillis.map(number).asJson,
            "rescued_by_session" -> k.rescuedBySession.asJson,
            "kill_details" ->
              k.kills.zip(k.rescueOfKill).zip(k.lockFreed).map { case ((kill, rescue), freed) =>
                Json.obj(
                  "worker" -> kill.workerId.asJson,
                  "session_held" -> kill.sessionHeld.asJson,
                  "others_alive" -> kill.othersAlive.asJson,
                  "rescue_ms" -> rescue.fold(Json.Null)(r => number(r._1)),
                  "by_session" -> rescue.fold(Json.Null)(_._2.asJson),
                  "lock_freed_ms" -> freed.fold(Json.Null)(number)
                )
              }.asJson,
            "rerun_ms" -> k.rerunMillis.map(number).asJson,
            "false_rescues" -> k.falseRescues.asJson,
            "restarts" -> k.restarts.size.asJson,
            "restart_outage_ms" -> k.restarts.map(r => number(r.outageMillis)).asJson,
            "restart_rescues" -> k.restartRescues.asJson,
            "repeats_after_restart" -> k.repeatsAfterRestart.asJson,
            "lost" -> k.lost.asJson,
            "executions" -> k.executions.asJson,
            "duplicates" -> k.duplicates.asJson,
            "unexplained_duplicates" -> k.unexplainedDuplicates.asJson,
            "key_violations" -> k.keyViolations.asJson
          )
        ),
        "history" -> r.history.fold(Json.Null)(h =>
          Json.obj(
            "backlog" -> h.backlog.asJson,
            "claim_batch" -> HistoryPhase.claimBatch.asJson,
            "sizes" -> h.sizes.map(z =>
              Json.obj(
                "finished_rows" -> z.finishedRows.asJson,
                "finished_bytes" -> z.finishedBytes.asJson,
                "fill_s" -> number(z.fillSeconds),
                "claims" -> z.claimMillis.size.asJson,
                "claim_ms" -> percentiles(z.claimMillis),
                "worked_per_s" -> number(z.workedPerSecond)
              )
            ).asJson,
            "claim_p50_ratio" -> number(h.ratio(_.p50)),
            "claim_p99_ratio" -> number(h.ratio(_.p99)),
            "worked_ratio" -> number(h.ratio(_.workedPerSecond))
          )
        ),
        "control" -> r.control.fold(Json.Null)(c =>
          Json.obj(
            "pause_to_last_claim_ms" -> number(c.pauseToLastClaimMillis),
            "pause_call_ms" -> number(c.pauseCallMillis),
            "claims_after_quiet" -> c.claimsAfterQuiet.asJson,
            "global_limit" -> c.globalLimit.asJson,
            "max_running_seen" -> c.maxRunningSeen.asJson,
            "limit_samples" -> c.limitSamples.asJson,
            "rate_asked_per_s" -> number(c.rateAsked),
            "rate_seen_per_s" -> number(c.rateSeen),
            "rate_window_s" -> c.rateWindow.toSeconds.asJson,
            "schedule_ticks" -> c.scheduleTicks.asJson,
            "schedule_duplicates" -> c.scheduleDuplicates.asJson,
            "schedule_gaps" -> c.scheduleGaps.asJson,
            "revoked_started" -> c.revokedStarted.asJson,
            "revoked_refused" -> c.revokedRefused.asJson,
            "cancels" -> c.cancels.asJson,
            "cancel_to_interrupt_p50_ms" -> number(c.cancelQuantile(0.5)),
            "cancel_to_interrupt_p99_ms" -> number(c.cancelQuantile(0.99)),
            "cancel_to_interrupt_max_ms" -> number(c.cancelQuantile(1.0)),
            "cancelled_seen" -> c.cancelledSeen.asJson
          )
        ),
        "workflow" -> r.workflow.fold(Json.Null)(WorkflowReport.json),
        "status" -> (if r.failures.isEmpty then "ok" else "failed").asJson,
        "failures" -> r.failures.asJson
      )
    )
