package weir.lab.compare.report

import cats.effect.IO
import org.knowm.xchart.BitmapEncoder
import weir.lab.compare.Measurement
import weir.lab.compare.scenarios.Workload
import weir.lab.report.{ExperimentIo, LivePage}

import java.nio.file.{Files, Path}

/**
 * `--report DIR`: every chart as `NAME.png` (see [[Charts]]), for documents that show one chart, and
 * `index.html`, the same self-contained page as `--html` ([[Page]]).
 */
object Report:

  def write(
      dir: Path,
      env: JsonReport.Environment,
      workloads: Vector[Workload],
      measurements: Vector[Measurement]
  ): IO[Unit] =
    IO.blocking {
      val _ = Files.createDirectories(dir)
      val charts = Charts.of(env, workloads, measurements)
      charts.all.foreach { c =>
        BitmapEncoder.saveBitmap(c.chart, dir.resolve(c.name).toString, BitmapEncoder.BitmapFormat.PNG)
      }
      Page.render(env, workloads, measurements, charts, LivePage.Stage.Finished, measurements.size)
    }.flatMap(ExperimentIo.writeAtomically(dir.resolve("index.html"), _))
