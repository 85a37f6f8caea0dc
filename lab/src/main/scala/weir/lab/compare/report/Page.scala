package weir.lab.compare.report

import weir.lab.compare.Measurement
import weir.lab.compare.scenarios.Workload
import weir.lab.report.{Html, LivePage}

/**
 * `compare`'s self-contained HTML page (`--html FILE`, and `index.html` of `--report DIR`): the
 * environment, the ratio chart, then per load shape its table, its timeline and each approach's timeline,
 * and the approach × shape matrix. While the run goes, it says how far it got and reloads itself.
 */
object Page:

  /**
   * @param measurements what finished so far, in the run's order
   * @param expected     how many measurements the whole run makes
   * @param embed        how a chart gets into the page: [[chart]], or a copy kept from an earlier page
   */
  def render(
      env: JsonReport.Environment,
      workloads: Vector[Workload],
      measurements: Vector[Measurement],
      charts: Charts,
      stage: LivePage.Stage,
      expected: Int,
      embed: Charts.Named => Html = chart
  ): String =
    val rows = Rows.of(measurements)
    val status = stage match
      case LivePage.Stage.Running(every) =>
        Html.status(
          s"Running: ${measurements.size} of $expected measurements finished; this page reloads every " +
            s"${math.max(1L, every.toSeconds)} s."
        )
      case LivePage.Stage.Stopped =>
        Html.status(s"Stopped before the end: ${measurements.size} of $expected measurements finished.")
      case LivePage.Stage.Finished => Html.empty
    val shapes = charts.timelines.map { t =>
      val w = t.workload
      val table = ResultsTable.shape(rows, w, env.runs)
      Html.concat(Vector(
        Html.heading(2, w.name),
        Html.paragraph(w.describe),
        Html.table(w.name, table, ResultsTable.shapeNumbers(table)),
        embed(t.all),
        Html.grid(t.singles.map(embed))
      ))
    }
    val matrix = ResultsTable.matrix(rows, workloads).fold(Html.empty) { cells =>
      Html.concat(Vector(
        Html.heading(2, s"makespan ms (ratio to ideal)${if env.runs > 1 then ", medians" else ""}"),
        Html.table("matrix", cells, (1 until cells.head.size).toSet)
      ))
    }
    Html.page(
      "weir compare",
      stage.refresh,
      status,
      Html.paragraph(
        s"Clock: ${env.clock}, time scale ${env.timeScale}, seed ${env.seed}, ${env.runs} run(s); " +
          s"weir ${env.weirVersion}, JDK ${env.jdk} (${env.vm}), ${env.os}, ${env.cores} cores, " +
          s"max heap ${env.maxHeapMiB} MiB."
      ),
      Html.paragraph(
        "The ideal: tasks available when their producer has waited out its batches' delays, started " +
          "first-come first-served on the same number of slots as soon as one is free, with no overhead. " +
          "Ratio = makespan / ideal. That order is one of many: a run that starts tasks in another order can " +
          "pack them better and end sooner, so each run is also divided by the ideal of its own start order, " +
          "a lower bound of it. The bounded ideal (workloads whose buffer is smaller than a burst) is the same " +
          "model with the workload's buffer: a producer whose batch finds it full waits for room."
      ),
      charts.ratios.fold(Html.empty)(embed),
      Html.concat(shapes),
      matrix
    )

  /** The chart drawn as a PNG into the page. */
  def chart(c: Charts.Named): Html = Html.chart(c.name, c.chart)
