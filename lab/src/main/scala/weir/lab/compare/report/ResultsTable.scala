package weir.lab.compare.report

import weir.lab.compare.scenarios.Workload
import weir.lab.report.Table

/** `compare`'s terminal table: a block per load shape, then the write-up's approach × shape matrix. */
object ResultsTable:

  def render(rows: Vector[Row], workloads: Vector[Workload], runs: Int): String =
    val sb = new StringBuilder
    workloads.filter(w => rows.exists(_.scenario == w.name)).foreach { w =>
      val mine = rows.filter(_.scenario == w.name)
      sb ++= s"\n${w.name}: ${w.describe}\n"
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
      sb ++= Table.grid(header +: (ideals ++ body), rightAligned = Set(1, 2, 3, 4, 5, 6))
    }
    val shapes = workloads.map(_.name).filter(s => rows.exists(_.scenario == s))
    if shapes.size > 1 then
      sb ++= s"\nmakespan ms (ratio to ideal)${if runs > 1 then ", medians" else ""}\n"
      val approaches = rows.map(_.approach).distinct
      val table = ("approach" +: shapes) +: approaches.map { a =>
        a +: shapes.map { s =>
          rows.find(r => r.scenario == s && r.approach == a).fold("") { r =>
            if r.makespan.isEmpty then r.status else f"${r.makespan.median}%.0f (${r.ratio.median}%.3f)"
          }
        }
      }
      sb ++= Table.grid(table, rightAligned = (1 to shapes.size).toSet)
    sb.result()

  private def ms(s: Stats, runs: Int): String =
    if s.isEmpty then "—"
    else if runs > 1 then f"${s.median}%.1f [${s.min}%.1f–${s.max}%.1f]"
    else f"${s.median}%.1f"

  private def ratio(s: Stats, runs: Int): String =
    if s.isEmpty then "—"
    else if runs > 1 then f"${s.median}%.3f [${s.min}%.3f–${s.max}%.3f]"
    else f"${s.median}%.3f"
