package weir.lab.compare.report

import weir.lab.Stats
import weir.lab.compare.scenarios.Workload
import weir.cli.Table

/**
 * `compare`'s tables, in the terminal and in the HTML page: a block per load shape, then the write-up's
 * approach × shape matrix.
 */
object ResultsTable:

  def render(rows: Vector[Row], workloads: Vector[Workload], runs: Int): String =
    val sb = new StringBuilder
    workloads.filter(w => rows.exists(_.scenario == w.name)).foreach { w =>
      sb ++= s"\n${w.name}: ${w.describe}\n"
      val table = shape(rows, w, runs)
      sb ++= Table.grid(table, rightAligned = shapeNumbers(table))
    }
    matrix(rows, workloads).foreach { cells =>
      sb ++= s"\nmakespan ms (ratio to ideal)${if runs > 1 then ", medians" else ""}\n"
      sb ++= Table.grid(cells, rightAligned = (1 until cells.head.size).toSet)
    }
    sb.result()

  /** The columns of a [[shape]] table that hold numbers: all but the approach and the status. */
  def shapeNumbers(table: Vector[Vector[String]]): Set[Int] = (1 until table.head.size).toSet --
    Set(table.head.indexOf("status"))

  /**
   * One load shape's table, header first: the ideal per producer count, then each approach. The columns
   * after the status are the ratio to the ideal of each run's own start order (a lower bound of the run)
   * and, when the workload's buffer is smaller than a burst, the ratio to the bounded ideal, whose own rows
   * give its makespan and its ratio to the unbounded ideal.
   */
  def shape(rows: Vector[Row], w: Workload, runs: Int): Vector[Vector[String]] =
    val mine = rows.filter(_.scenario == w.name)
    val bounded = mine.exists(!_.boundedIdeal.isEmpty)
    val header = Vector(
      "approach",
      "producers",
      if runs > 1 then s"makespan ms (median [min–max] of $runs)" else "makespan ms",
      "ratio to ideal",
      "peak in flight",
      "peak threads",
      "peak heap MiB",
      "status",
      "ratio to own order"
    ) ++ Option.when(bounded)("ratio to bounded ideal")
    def extra(cells: String*) = cells.toVector.take(if bounded then 2 else 1)
    val ok = mine.filter(_.status == "ok")
    val ideals = ok.map(r => (r.producers, r.ideal)).distinct.sortBy(_._1).map { (p, ideal) =>
      Vector(s"ideal ${producers(p)}", p.toString, ms(ideal, runs), "1.000", "", "", "", "") ++ extra("", "")
    }
    val boundedIdeals = ok.filter(!_.boundedIdeal.isEmpty)
      .map(r => (r.producers, r.boundedIdeal, r.boundedOverIdeal)).distinct.sortBy(_._1)
      .map { (p, b, overIdeal) =>
        Vector(
          s"bounded ideal ${producers(p)}",
          p.toString,
          ms(b, runs),
          ratio(overIdeal, runs),
          "",
          "",
          "",
          ""
        ) ++
          extra("", "1.000")
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
      ) ++ extra(ratio(r.ownOrderRatio, runs), ratio(r.boundedRatio, runs))
    }
    header +: (ideals ++ boundedIdeals ++ body)

  private def producers(p: Int): String = s"($p producer${if p > 1 then "s" else ""})"

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
