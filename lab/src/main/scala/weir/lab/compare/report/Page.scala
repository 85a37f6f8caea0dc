package weir.lab.compare.report

import weir.lab.compare.scenarios.Workload

/** The report's `index.html`: environment, the table, and the charts. No scripts, no external resources. */
object Html:

  private def esc(s: String): String = s.flatMap {
    case '<' => "&lt;"
    case '>' => "&gt;"
    case '&' => "&amp;"
    case '"' => "&quot;"
    case c => c.toString
  }

  def page(
      env: JsonReport.Environment,
      rows: Vector[Row],
      shapes: Vector[Workload],
      timelines: Vector[(Workload, Vector[String])]
  ): String =
    def cell(s: Stats, digits: Int) =
      if s.isEmpty then "—"
      else if s.min == s.max then s"%.${digits}f".format(s.median)
      else s"%.${digits}f <small>[%.${digits}f–%.${digits}f]</small>".format(s.median, s.min, s.max)
    val tables = shapes.map { w =>
      val mine = rows.filter(_.scenario == w.name)
      val trs = mine.map { r =>
        s"<tr><td>${esc(r.approach)}</td><td>${r.producers}</td><td>${cell(r.ideal, 1)}</td><td>${cell(r.makespan, 1)}</td>" +
          s"<td>${cell(r.ratio, 3)}</td><td>${r.peakInFlight}</td><td>${r.peakThreads.fold("n/a")(_.toString)}</td><td>${r.peakHeapMiB.fold("n/a")(_.toString)}</td><td>${esc(r.status)}</td></tr>"
      }.mkString("\n")
      s"""<h2>${esc(w.name)}</h2><p>${esc(w.describe)}</p>
         |<table><tr><th>approach</th><th>producers</th><th>ideal ms</th><th>makespan ms</th><th>ratio to ideal</th><th>peak in flight</th>
         |<th>peak threads</th><th>peak heap MiB</th><th>status</th></tr>
         |$trs</table>""".stripMargin
    }.mkString("\n")
    val charts = timelines.map { (w, approaches) =>
      val singles = approaches.map(a =>
        s"""<img src="timeline-${esc(w.name)}-${esc(a)}.png" alt="${esc(a)}">"""
      ).mkString("\n")
      s"""<h2>Timeline: ${esc(w.name)}</h2><img src="timeline-${esc(w.name)}.png" alt="${esc(
          w.name
        )}"><div class="grid">$singles</div>"""
    }.mkString("\n")
    s"""<!doctype html>
       |<html><head><meta charset="utf-8"><title>weir compare</title>
       |<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
       |td:first-child,th:first-child{text-align:left}.grid img{width:48%}</style></head><body>
       |<h1>weir compare</h1>
       |<p>Clock: ${esc(env.clock)}, time scale ${env.timeScale}, seed ${env.seed}, ${env.runs} run(s);
       |JDK ${esc(env.jdk)} (${esc(env.vm)}), ${esc(env.os)}, ${env.cores} cores, max heap ${env.maxHeapMiB} MiB.</p>
       |<p>The ideal: tasks available when their producer has waited out its batches' delays, started first-come
       |first-served on the same number of slots as soon as one is free, with no overhead. Ratio = makespan / ideal.</p>
       |<img src="ratios.png" alt="ratio to ideal">
       |$tables
       |$charts
       |</body></html>
       |""".stripMargin
