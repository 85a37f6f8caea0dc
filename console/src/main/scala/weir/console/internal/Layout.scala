package weir.console.internal

import weir.console.{ConsoleAccess, ReaderView}
import weir.console.internal.Html.*
import weir.postgres.CappedCount

import java.net.URLEncoder
import java.nio.charset.StandardCharsets.UTF_8
import java.time.{Instant, ZoneOffset}
import java.time.format.DateTimeFormatter

/**
 * What a page is rendered for: `root`, the relative path from the page to the console's root (`./`,
 * `../`…), so that every link works under whatever prefix the routes are mounted at; who asks; when; and
 * what readers may see.
 */
private[console] final case class View(root: String, caller: Caller, now: Instant, readers: ReaderView):
  def link(path: String): String = root + path

  /** Whether the page shows payloads, headers and errors' text: to operators who act, and to readers if allowed. */
  def details: Boolean = caller.access match
    case _: ConsoleAccess.Act => true
    case _ => readers == ReaderView.Full

  /**
   * Whether the page shows the action forms: to an operator who may act, and to a reader of a console they
   * can log in to (an action then says to log in).
   */
  def writable: Boolean = caller.access match
    case _: ConsoleAccess.Act => true
    case _ => caller.mode == Caller.Mode.OwnLogin

  /** The CSRF token the forms carry: `None` unless the operator may act. */
  def csrf: Option[String] = caller.csrf

/** The frame of every page and the small formatting helpers the pages share. */
private[console] object Layout:

  private val sections =
    Vector(
      "" -> "Overview",
      "tasks" -> "Tasks",
      "keys" -> "Keys",
      "workers" -> "Workers",
      "schedules" -> "Schedules",
      "audit" -> "Audit"
    )

  def page(v: View, title: String, current: String)(body: Html): Html =
    val nav = Html.concat(sections.map { (path, name) =>
      val attr = if path == current then Html(" aria-current=\"page\"") else Html.empty
      html"""<a href="${v.link(path)}"$attr>$name</a>"""
    })
    val session = (v.caller.access, v.caller.mode) match
      case (ConsoleAccess.Act(name, _), Caller.Mode.OwnLogin) =>
        html"""<span class="operator">$name</span> <form method="post" action="${v.link(
            "logout"
          )}" class="inline">${csrfField(v)}<button>Log out</button></form>"""
      case (ConsoleAccess.Act(name, _), _) => html"""<span class="operator">$name</span>"""
      case (_, Caller.Mode.OwnLogin) => html"""<a href="${v.link("login")}">Log in</a>"""
      case (ConsoleAccess.Read(name, _), _) if name.nonEmpty =>
        html"""<span class="operator">$name</span> <span class="badge">read-only</span>"""
      case _ => html"""<span class="badge">read-only</span>"""
    html"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title · weir console</title>
<link rel="stylesheet" href="${v.link("assets/console.css")}">
<link rel="stylesheet" href="${v.link("assets/uplot/uPlot.min.css")}">
<script src="${v.link("assets/uplot/uPlot.iife.min.js")}" defer></script>
<script src="${v.link("assets/console.js")}" defer></script>
</head><body>
<header><strong>weir</strong><nav>$nav</nav><span class="session">$session</span></header>
<main><h1>$title</h1>
$body
</main></body></html>
"""

  /** The hidden field that carries the session's CSRF token in every form that acts. */
  def csrfField(v: View): Html =
    v.csrf.fold(Html.empty)(t => html"""<input type="hidden" name="csrf" value="$t">""")

  def encode(s: String): String = URLEncoder.encode(s, UTF_8).replace("+", "%20")

  def query(params: Seq[(String, String)]): String =
    if params.isEmpty then "" else params.map((k, v) => s"${encode(k)}=${encode(v)}").mkString("?", "&", "")

  val timeFormat: DateTimeFormatter =
    DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC)

  def time(t: Instant): Html = html"""<time datetime="${t.toString}">${timeFormat.format(t)}</time>"""

  def time(t: Option[Instant]): Html = t.fold(Html("–"))(time)

  /** A duration in seconds, in the largest unit that keeps it readable. */
  def age(seconds: Double): String =
    val s = seconds.max(0)
    if s < 1 then f"${s * 1000}%.0f ms"
    else if s < 120 then f"$s%.0f s"
    else if s < 7200 then f"${s / 60}%.0f min"
    else if s < 172800 then f"${s / 3600}%.1f h"
    else f"${s / 86400}%.1f d"

  /** A count that stops at a cap: `1,000+` at the cap of 1,000. */
  def count(c: CappedCount): String = if c.atLeast then f"${c.n}%,d+" else f"${c.n}%,d"

  def since(v: View, t: Instant): String = age((v.now.toEpochMilli - t.toEpochMilli) / 1000.0)

  def state(s: String): Html = html"""<span class="state state-$s">$s</span>"""

  def message(kind: String, text: String): Html = html"""<p class="$kind" role="status">$text</p>"""
