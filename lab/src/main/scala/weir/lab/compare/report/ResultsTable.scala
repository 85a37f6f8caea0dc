package weir.lab.compare.report

import weir.lab.Stats
import weir.lab.compare.scenarios.Workload
import weir.lab.report.Table

/**
 * `compare`'s tables, in the terminal and in the HTML page: a block per load shape, then the write-up's
 * approach × shape matrix.
 */
object ResultsTable:

  def render(rows: Vector[Row], workloads: Vector[Workload], runs: Int): String =
    val sb = new StringBuilder
    workloads.filter(w => rows.exists(_.scenario == w.name)).foreach { w =>
      sb ++= s"\n${w.name}: ${w.describe}\n"
      sb ++= Table.grid(shape(rows, w, runs), rightAligned = shapeNumbers)
    }
    matrix(rows, workloads).foreach { cells =>
      sb ++= s"\nmakespan ms (ratio to ideal)${if runs > 1 then ", medians" else ""}\n"
      sb ++= Table.grid(cells, rightAligned = (1 until cells.head.size).toSet)
    }
    sb.result()

  /** The columns of [[shape]] that hold numbers. */
  val shapeNumbers: Set[Int] = Set(1, 2, 3, 4, 5, 6)

  /** One load shape's table, header first: the ideal per producer count, then each approach. */
  def shape(rows: Vector[Row], w: Workload, runs: Int): Vector[Vector[String]] =
    val mine = rows.filter(_.scenario == w.name)
    val header = Vector(
      "approach",
      "producers",
      if runs > 1 then s"makespan ms (median [min–max] of $runs)" else "makespan ms",
      "ratio to ideal",
      "peak in flight",
      "peak threads",
      "peak heap MiB",
      "status"
    )
    val ideals = mine.filter(_.status == "ok").map(r => (r.producers, r.ideal)).distinct.sortBy(_._1).map {
      (p, ideal) =>
        Vector(
          s"ideal ($p producer${if p > 1 then "s" else ""})",
          p.toString,
          ms(ideal, runs),
          "1.000",
          "",
          "",
          "",
          ""
        )
    }
    val body = mine.map { r =>
      Vector(
        r.approach,
        r.producers.toString,
        ms(r.makespan, runs),
        ratio(r.ratio, runs),
        r.peakInFlight.toString,
        r.peakThreads.fold("n/a")(_.toString),
        r.peakHeapMiB.fold("n/a")(_.toString),
        r.status
      )
    }
    header +: (ideals ++ body)

  /** The write-up's approach × load shape matrix, header first; only when more than one shape has rows. */
  def matrix(rows: Vector[Row], workloads: Vector[Workload]): Option[Vector[Vector[String]]] =
    val shapes = workloads.map(_.name).filter(s => rows.exists(_.scenario == s))
    Option.when(shapes.size > 1) {
      val approaches = rows.map(_.approach).distinct
      ("approach" +: shapes) +: approaches.map { a =>
        a +: shapes.map { s =>
          rows.find(r => r.scenario == s && r.approach == a).fold("") { r =>
            if r.makespan.isEmpty then r.status else f"${r.makespan.median}%.0f (${r.ratio.median}%.3f)"
          }
        }
      }
    }

  private def ms(s: Stats, runs: Int): String =
    if s.isEmpty then "—"
    else if runs > 1 then f"${s.median}%.1f [${s.min}%.1f–${s.max}%.1f]"
    else f"${s.median}%.1f"

  private def ratio(s: Stats, runs: Int): String =
    if s.isEmpty then "—"
    else if runs > 1 then f"${s.median}%.3f [${s.min}%.3f–${s.max}%.3f]"
    else f"${s.median}%.3f"
