package weir.lab.report

import munit.FunSuite
import org.knowm.xchart.XYChartBuilder

import java.io.ByteArrayInputStream
import java.util.Base64
import javax.imageio.ImageIO
import scala.concurrent.duration.*

class HtmlSuite extends FunSuite:

  test("text is escaped in elements and attributes: a name cannot open a tag or close an attribute") {
    val evil = """<script>alert("x")</script> & 'q'"""
    val escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"
    assertEquals(Html.escape(evil), escaped)
    val page = Html.page(evil, None, Html.paragraph(evil), Html.table(evil, Vector(Vector(evil)), Set.empty))
    assert(!page.contains("<script>alert"), page)
    assert(page.contains(s"<title>$escaped</title>"), page)
    assert(page.contains(s"<p>$escaped</p>"), page)
    assert(page.contains(s"""<table id="table-$escaped">"""), page)
  }

  test("a table: the first row is the header, number columns are marked, every row is kept") {
    val t = Html.page(
      "t",
      None,
      Html.table(
        "results",
        Vector(Vector("approach", "ms"), Vector("weir", "12.5"), Vector("batch", "30.0")),
        Set(1)
      )
    )
    assert(
      t.contains(
        """<table id="table-results"><thead><tr><th>approach</th><th class="num">ms</th></tr></thead>"""
      ),
      t
    )
    assert(t.contains("""<tr><td>weir</td><td class="num">12.5</td></tr>"""), t)
    assert(t.contains("""<tr><td>batch</td><td class="num">30.0</td></tr>"""), t)
  }

  test("a chart is embedded as a PNG data URI that decodes to the chart's size, in a figure named after it") {
    val chart = new XYChartBuilder().width(320).height(200).title("a line").build()
    val _ = chart.addSeries("y = x", Array(0.0, 1.0, 2.0), Array(0.0, 1.0, 2.0))
    val page = Html.page("charts", None, Html.chart("line", chart))
    val figure =
      """<figure class="chart" id="chart-line"><img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="a line">""".r
    val data =
      figure.findFirstMatchIn(page).map(_.group(1)).getOrElse(fail(s"no chart figure in\n${page.take(2000)}"))
    val image = ImageIO.read(new ByteArrayInputStream(Base64.getDecoder.decode(data)))
    assertEquals((image.getWidth, image.getHeight), (320, 200))
  }

  test("a page reloads itself only when given a refresh period, and loads nothing from elsewhere") {
    val live = Html.page("live", Some(2.seconds), Html.paragraph("so far"))
    val done = Html.page("done", None, Html.paragraph("all"))
    assert(live.contains("""<meta http-equiv="refresh" content="2">"""), live)
    assert(!done.contains("http-equiv"), done)
    List(live, done).foreach { p =>
      assert(!p.contains(" src=\"http") && !p.contains(" href=") && !p.contains("<link"), p)
      assert(p.contains("data-rendered"), "the script that marks decoded charts is in the page")
    }
  }

  test("a heading level outside 1..6 is refused, naming it") {
    val e = intercept[IllegalArgumentException](Html.heading(7, "x"))
    assertEquals(e.getMessage, "requirement failed: heading level must be in 1..6, was: 7")
  }
