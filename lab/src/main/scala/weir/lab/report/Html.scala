package weir.lab.report

import org.knowm.xchart.BitmapEncoder
import org.knowm.xchart.internal.chartpart.Chart

import java.util.Base64
import scala.concurrent.duration.FiniteDuration

/**
 * A fragment of an HTML page, built only by the constructors below, which escape every string
 * they are given: a workload or approach name can never break the markup.
 */
opaque type Html = String

/**
 * The lab's self-contained HTML pages: everything a page shows is inside the one file (styles, tables, and
 * charts as PNG `data:` URIs), so it opens offline, from a mail attachment or a CI artifact.
 *
 * Every chart is a `<figure class="chart" id="chart-NAME">`. On load, a small inline script marks each
 * one `data-rendered="yes"` when its image decoded (`"no"` otherwise) and puts the number of charts in
 * the body's `data-charts`: a headless browser's DOM dump then shows what a reader would have seen.
 */
object Html:

  val empty: Html = ""

  /** `s` safe inside an element or a double-quoted attribute. */
  def escape(s: String): String =
    val sb = new StringBuilder(s.length)
    s.foreach {
      case '<' => sb ++= "&lt;"
      case '>' => sb ++= "&gt;"
      case '&' => sb ++= "&amp;"
      case '"' => sb ++= "&quot;"
      case '\'' => sb ++= "&#39;"
      case c => sb += c
    }
    sb.result()

  def concat(parts: Iterable[Html]): Html = parts.mkString("\n")

  def heading(level: Int, s: String): Html =
    require(level >= 1 && level <= 6, s"heading level must be in 1..6, was: $level")
    s"<h$level>${escape(s)}</h$level>"

  def paragraph(s: String): Html = s"<p>${escape(s)}</p>"

  /** A bulleted list of plain-text items. */
  def list(items: Iterable[String]): Html =
    items.map(i => s"<li>${escape(i)}</li>").mkString("<ul>", "", "</ul>")

  /**
   * A table with the id `table-NAME`: `cells.head` is the header row; columns in `rightAligned` (numbers)
   * are aligned right, as in the terminal's [[Table.grid]].
   */
  def table(name: String, cells: Vector[Vector[String]], rightAligned: Set[Int]): Html =
    def row(tag: String, cs: Vector[String]) =
      cs.zipWithIndex.map { (c, i) =>
        val cls = if rightAligned(i) then " class=\"num\"" else ""
        s"<$tag$cls>${escape(c)}</$tag>"
      }.mkString("<tr>", "", "</tr>")
    val head = cells.headOption.fold("")(row("th", _))
    val body = cells.drop(1).map(row("td", _)).mkString("\n")
    s"""<table id="table-${escape(name)}"><thead>$head</thead><tbody>
       |$body
       |</tbody></table>""".stripMargin

  /** `chart` drawn as a PNG and embedded in the page, in a figure with the id `chart-NAME`. */
  def chart(name: String, chart: Chart[?, ?]): Html =
    System.setProperty("java.awt.headless", "true")
    png(name, chart.getTitle, BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG))

  /** `caption` is the image's alternative text too. */
  private def png(name: String, caption: String, bytes: Array[Byte]): Html =
    val data = Base64.getEncoder.encodeToString(bytes)
    s"""<figure class="chart" id="chart-${escape(name)}"><img src="data:image/png;base64,$data" alt="${escape(
        caption
      )}"><figcaption>${escape(caption)}</figcaption></figure>"""

  /** Charts side by side, two to a row. */
  def grid(parts: Iterable[Html]): Html = parts.mkString("<div class=\"grid\">\n", "\n", "\n</div>")

  /**
   * A whole page. With `refresh`, the browser reloads it after that long: a page that is rewritten while a
   * run goes is followed by a browser left open on it.
   */
  def page(title: String, refresh: Option[FiniteDuration], body: Html*): String =
    val reload =
      refresh.fold("")(d => s"""<meta http-equiv="refresh" content="${math.max(1L, d.toSeconds)}">""")
    s"""<!doctype html>
       |<html lang="en"><head><meta charset="utf-8">$reload
       |<title>${escape(title)}</title>
       |<style>$style</style>
       |<script>$markRendered</script>
       |</head><body>
       |<h1>${escape(title)}</h1>
       |${body.mkString("\n")}
       |</body></html>
       |""".stripMargin

  private val style =
    "body{font-family:sans-serif;margin:2em;max-width:1200px}" +
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}" +
      ".num{text-align:right}figure.chart{margin:1em 0}figure.chart img{max-width:100%}" +
      ".grid{display:flex;flex-wrap:wrap;gap:1em}.grid figure.chart{width:48%}" +
      ".status{background:#fff6d5;padding:.5em}"

  private val markRendered =
    """window.addEventListener('load', function () {
      |  var charts = document.querySelectorAll('figure.chart');
      |  charts.forEach(function (f) {
      |    var img = f.querySelector('img');
      |    f.setAttribute('data-rendered', img && img.complete && img.naturalWidth > 0 ? 'yes' : 'no');
      |  });
      |  document.body.setAttribute('data-charts', String(charts.length));
      |});""".stripMargin

  /** A line that stands out: what state the run is in. */
  def status(s: String): Html = s"""<p class="status">${escape(s)}</p>"""
