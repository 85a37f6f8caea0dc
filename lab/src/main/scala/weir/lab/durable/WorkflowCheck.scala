package weir.lab.durable

import weir.lab.durable.WorkflowPlan.{Edge, Outcome, Plan, Scenario}

/**
 * What the workflow run's records say against its plan ([[WorkflowPlan]]): the `finished` rows (each task's
 * end, on the server's clock) and the workers' execution records (each run's start, on the same clock).
 * Pure, so that each check can be fed records that break it.
 */
object WorkflowCheck:

  /** A task's row in `finished`: its key (its payload's absolute value), id, state and end (ms). */
  final case class Ended(key: Int, id: Long, state: String, atMillis: Double)

  /** One run of a task as a worker recorded it; a callback's run carries the counts its batch ended with. */
  final case class Run(
      key: Int,
      taskId: Long,
      worker: Long,
      atMillis: Double,
      counts: Option[(Long, Long, Long)]
  )

  /**
   * The checks' findings. `lost`: each task that did not end as the plan says (or ended twice, or never);
   * `early`: each run of a dependent that started before one of its parents had ended as it asks (a
   * batch's callback waits for every member to end); `cancelled`: the tasks ended cancelled, of which
   * `unexplainedCancels` names those with no parent they need completed ended dead or cancelled;
   * `callbacks`: the callbacks that ran; `callbackDuplicates`: each callback run again with no kill or
   * restart to explain it ([[KillPhase.unexplained]]); `callbackCounts`: each callback whose batch's counts
   * are not the plan's; `latencies`: per kind of dependent, from its last parent's end to its first start.
   */
  final case class Findings(
      tasks: Int,
      lost: Vector[String],
      early: Vector[String],
      cancelled: Long,
      unexplainedCancels: Vector[String],
      callbacks: Long,
      callbackDuplicates: Vector[String],
      callbackCounts: Vector[String],
      latencies: Map[String, Vector[Double]]
  ):
    /**
     * Last parent's end → first start of every dependent but the fan-out's: those are released together,
     * thousands at once, and start as the workers get through them (see `fan-out`), and a callback's batch
     * ends at its close if that comes last (see `callback`).
     */
    def parentToChild: Vector[Double] =
      latencies.toVector.filterNot((kind, _) => kind == fanOutKind || kind == callbackKind).flatMap(_._2)

  val fanOutKind = "fan-out"
  val fanInKind = "fan-in"
  val callbackKind = "callback"

  /** The kinds of dependents whose latencies are kept apart, in the order they are reported. */
  val kinds: Vector[String] = Vector(fanOutKind, fanInKind, "chain", "dag", "batch", callbackKind)

  def apply(
      plan: Plan,
      ended: Vector[Ended],
      runs: Vector[Run],
      kills: Vector[KillPhase.Kill],
      restarts: Vector[KillPhase.Restart]
  ): Findings =
    val rows = ended.groupBy(_.key)
    val end = rows.view.mapValues(_.head).toMap
    val members = plan.batches.map(b => b.callback -> b.nodes.map(n => Edge(n.key, anyOutcome = true))).toMap
    def parentsOf(key: Int): Vector[Edge] =
      plan.byKey.get(key).fold(members.getOrElse(key, Vector.empty))(_.parents)
    val lost = plan.expected.toVector.sortBy(_._1).flatMap { (key, outcome) =>
      rows.get(key) match
        case None => Some(s"task $key never ended (expected ${outcome.state})")
        case Some(Vector(e)) if Outcome.of(e.state).contains(outcome) => None
        case Some(Vector(e)) => Some(s"task $key (id ${e.id}) ended ${e.state}, expected ${outcome.state}")
        case Some(es) => Some(s"task $key ended ${es.size} times (ids ${es.map(_.id).mkString(", ")})")
    }
    val early = runs.flatMap { r =>
      parentsOf(r.key).flatMap { e =>
        end.get(e.parent) match
          case None => Some(
              s"task ${r.key} (id ${r.taskId}) started at ${r.atMillis} though task ${e.parent} never ended"
            )
          case Some(p) if p.atMillis > r.atMillis =>
            Some(
              s"task ${r.key} (id ${r.taskId}) started at ${r.atMillis}, before task ${e.parent} ended at ${p.atMillis}"
            )
          case Some(p) if !e.anyOutcome && p.state != Outcome.Completed.state =>
            Some(
              s"task ${r.key} (id ${r.taskId}) started though task ${e.parent}, which it needs completed, ended ${p.state}"
            )
          case _ => None
      }.take(1)
    }
    val cancelledKeys = end.values.filter(_.state == Outcome.Cancelled.state).map(_.key).toVector.sorted
    val unexplainedCancels = cancelledKeys.filterNot(k =>
      parentsOf(k).exists(e => !e.anyOutcome && end.get(e.parent).exists(_.state != Outcome.Completed.state))
    ).map(k => s"task $k ended cancelled though no parent it needs completed ended dead or cancelled")
    val callbackRuns = runs.filter(r => members.contains(r.key))
    val callbackDuplicates = KillPhase.unexplained(
      callbackRuns.map(r => (r.key.toLong, r.worker, Option.empty[String], r.atMillis)),
      kills,
      restarts
    )
    val callbackCounts = plan.callbackCounts.toVector.sortBy(_._1).flatMap { (key, counts) =>
      callbackRuns.find(_.key == key).flatMap(_.counts).filter(_ != counts).map(seen =>
        s"callback $key read (completed, dead, cancelled) = $seen, expected $counts"
      )
    }
    val firstStart = runs.groupBy(_.key).view.mapValues(_.map(_.atMillis).min).toMap
    val latencies = firstStart.toVector.flatMap { (key, start) =>
      val edges = parentsOf(key)
      val parentEnds = edges.flatMap(e => end.get(e.parent).map(_.atMillis))
      Option.when(edges.nonEmpty && parentEnds.size == edges.size)(kindOf(plan, key) ->
        (start - parentEnds.max))
    }.groupMap(_._1)(_._2)
    Findings(
      tasks = plan.expected.size,
      lost = lost,
      early = early,
      cancelled = cancelledKeys.size.toLong,
      unexplainedCancels = unexplainedCancels,
      callbacks = callbackRuns.map(_.key).distinct.size.toLong,
      callbackDuplicates = callbackDuplicates,
      callbackCounts = callbackCounts,
      latencies = latencies
    )

  private def kindOf(plan: Plan, key: Int): String =
    plan.byKey.get(key).fold(callbackKind) { n =>
      n.scenario match
        case Scenario.FanOut => if n.parents.size > 1 then fanInKind else fanOutKind
        case other => other.label
    }
