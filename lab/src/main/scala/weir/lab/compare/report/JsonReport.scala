package weir.lab.compare.report

import io.circe.Json
import io.circe.syntax.*
import weir.lab.compare.Measurement

/**
 * `--json FILE`: the environment once, then one record per (load shape, approach, run).
 *
 * {{{
 * {"environment": {"jdk": "25", "cores": 2, "seed": 0, "clock": "virtual", "time_scale": 1.0, ...},
 *  "records": [{"scenario": "balanced", "approach": "weir", "run": 0, "makespan_ms": 12874.0,
 *               "ideal_ms": 12874.0, "ratio": 1.0, "status": "ok", ...}, ...]}
 * }}}
 * `makespan_ms` and the ratios are null for a run that did not finish (see `status`). `bounded_ideal_ms`
 * and `bounded_ratio` are null unless the workload's buffer is smaller than a burst; `own_order_ideal_ms`
 * is the ideal of the run's own start order, a lower bound of its makespan (`own_order_ratio` >= 1).
 */
object JsonReport:

  final case class Environment(
      jdk: String,
      vm: String,
      os: String,
      cores: Int,
      maxHeapMiB: Long,
      seed: Long,
      clock: String,
      timeScale: Double,
      runs: Int,
      weirVersion: String
  )

  object Environment:
    def current(seed: Long, clock: String, timeScale: Double, runs: Int): Environment =
      Environment(
        System.getProperty("java.version"),
        s"${System.getProperty("java.vm.name")} ${System.getProperty("java.vm.version")}",
        s"${System.getProperty("os.name")} ${System.getProperty("os.arch")}",
        Runtime.getRuntime.availableProcessors,
        Runtime.getRuntime.maxMemory / (1024 * 1024),
        seed,
        clock,
        timeScale,
        runs,
        Option(classOf[weir.Pipeline[?, ?, ?]].getPackage.getImplementationVersion).getOrElse("dev")
      )

  def render(env: Environment, measurements: Vector[Measurement]): Json =
    Json.obj(
      "environment" -> Json.obj(
        "jdk" -> env.jdk.asJson,
        "vm" -> env.vm.asJson,
        "os" -> env.os.asJson,
        "cores" -> env.cores.asJson,
        "max_heap_mib" -> env.maxHeapMiB.asJson,
        "seed" -> env.seed.asJson,
        "clock" -> env.clock.asJson,
        "time_scale" -> env.timeScale.asJson,
        "runs" -> env.runs.asJson,
        "weir_version" -> env.weirVersion.asJson
      ),
      "records" -> measurements.map(record).asJson
    )

  private def number(d: Double): Json =
    if d.isNaN || d.isInfinite then Json.Null else Json.fromDoubleOrNull(d)

  def record(m: Measurement): Json =
    Json.obj(
      "scenario" -> m.scenario.asJson,
      "approach" -> m.approach.asJson,
      "run" -> m.run.asJson,
      "producers" -> m.producers.asJson,
      "makespan_ms" -> number(m.makespanMs),
      "ideal_ms" -> number(m.idealMs),
      "ratio" -> number(m.ratio),
      "bounded_ideal_ms" -> m.boundedIdealMs.fold(Json.Null)(number),
      "bounded_ratio" -> number(m.boundedRatio),
      "own_order_ideal_ms" -> m.ownOrderMs.fold(Json.Null)(number),
      "own_order_ratio" -> number(m.ownOrderRatio),
      "status" -> m.status.label.asJson,
      "error" ->
        (m.status match
          case weir.lab.compare.Status.Failed(reason) => reason.asJson
          case _ => Json.Null),
      "peak_threads" -> m.peakThreads.asJson,
      "peak_heap_mib" -> m.peakHeapMiB.asJson,
      "peak_in_flight" -> m.peakInFlight.asJson
    )
