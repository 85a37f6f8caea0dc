package weir.console.internal

import munit.FunSuite
import weir.console.internal.Html.*

/** Text reaches a page escaped; only [[Html]] passes through as markup. */
class ConsoleHtmlSuite extends FunSuite:

  test("interpolated text is escaped, interpolated Html is not") {
    val name = """<script>alert("x")</script> & 'q'"""
    val link = html"""<a href="x">$name</a>"""
    assertEquals(
      link.render,
      """<a href="x">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;</a>"""
    )
    assertEquals(html"<p>$link</p>".render, s"<p>${link.render}</p>")
  }

  test("an Option interpolates as its value or nothing, a collection as its elements") {
    val some: Option[String] = Some("<b>")
    val none: Option[String] = None
    assertEquals(html"[$some|$none]".render, "[&lt;b&gt;|]")
    assertEquals(html"${Vector(Html("<i>"), Html("</i>"))}".render, "<i></i>")
  }
