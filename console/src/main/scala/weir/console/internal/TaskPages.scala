package weir.console.internal

import io.circe.Printer
import io.circe.parser.parse
import weir.console.internal.Html.*
import weir.console.internal.Layout.*
import weir.console.internal.TaskFilter.params
import weir.postgres.{
  AuditEntry, KeyNeighbour, KeyNeighbours, TaskDetail, TaskPage, TaskQuery, TaskSort, TaskState
}

/** The task list with its filters and batch actions, and a task's own page. */
private[console] object TaskPages:

  /** How many of a task's audit entries its page shows, the newest. */
  val auditShown: Int = 20

  /** The payload after redaction, pretty-printed when it is JSON. */
  def payload(redact: String => String, text: String): String =
    val redacted = redact(text)
    parse(redacted).fold(_ => redacted, _.printWith(pretty))

  private val pretty = Printer.spaces2.copy(colonLeft = "")

  /** The trace id of a W3C `traceparent` header (`00-<trace id>-<span id>-<flags>`). */
  def traceId(headers: Map[String, String]): Option[String] =
    headers.get("traceparent").map(_.split('-')).collect { case Array(_, trace, _, _) => trace }

  private def stateOptions(selected: Option[TaskState]): Html =
    Html.concat(("" +: TaskState.values.toVector.map(_.name)).map { s =>
      val sel = if selected.exists(_.name == s) then Html(" selected") else Html.empty
      html"""<option value="$s"$sel>${if s.isEmpty then "any state" else s}</option>"""
    })

  def list(
      v: View,
      f: TaskQuery,
      result: TaskPage,
      redact: String => String,
      payloadSearch: Boolean
  ): Html =
    val rows = result.rows
    val dt = (t: Option[java.time.Instant]) => t.fold("")(_.toString.stripSuffix("Z").take(19))
    // "" keeps the state's own order (finished tasks by finish time, others by enqueue time)
    val explicit = f.sort != TaskSort.default(f.state)
    val sortOptions = Html.concat(
      (html"""<option value=""${
          if explicit then Html.empty else Html(" selected")
        }>its state's order</option>""") +:
        TaskSort.values.toVector.map { s =>
          val sel = if explicit && s == f.sort then Html(" selected") else Html.empty
          html"""<option value="${s.name}"$sel>by ${s.name} time</option>"""
        }
    )
    val firstOptions =
      html"""<option value="">newest first</option><option value="oldest"${
          if f.oldest then Html(" selected") else Html.empty
        }>oldest first</option>"""
    val search =
      if payloadSearch && v.details then
        html"""<input name="text" placeholder="text in payload" value="${f.text}">"""
      else Html.empty
    val filters = html"""<form method="get" action="${v.link("tasks")}" class="filters">
<input name="queue" placeholder="queue" value="${f.queue}">
<select name="state">${stateOptions(f.state)}</select>
<input name="key" placeholder="ordering key" value="${f.key}">
<input name="priority" placeholder="priority" size="6" value="${f.priority}">
<label>from <input name="from" type="datetime-local" step="1" value="${dt(f.from)}"></label>
<label>to <input name="to" type="datetime-local" step="1" value="${dt(f.to)}"></label>
$search
<select name="sort">$sortOptions</select>
<select name="first">$firstOptions</select>
<button>Filter</button></form>"""
    val next = result.next.fold(Html.empty)(c =>
      html"""<p><a rel="next" href="${v.link("tasks" +
          query(f.copy(after = Some(c)).params(withCursor = true)))}">${
          if result.scannedTo.isDefined then "Search further →" else "Next page →"
        }</a></p>"""
    )
    val scanned = result.scannedTo.fold(Html.empty)(c =>
      message(
        "note",
        s"Searched down to task ${c.id}${c.at.fold("")(t => s" (finished ${timeFormat.format(t)})")}: " +
          "this filter needs each task read, so a page reads a bounded number of them."
      )
    )
    val body =
      if rows.isEmpty then message("empty", "No task matches.")
      else
        val trs = rows.map { t =>
          val preview = if v.details then redact(t.payload) else "hidden"
          html"""<tr data-task="${t.id}"><td><input type="checkbox" name="id" value="${t.id}" aria-label="select task ${t.id}"></td>
<td><a href="${v.link("tasks/" + t.id)}">${t.id}</a></td><td>${t.queue}</td><td>${state(t.state.name)}</td>
<td class="n">${t.priority}</td><td>${t.key}</td><td class="n">${t.attempt}/${t.maxAttempts}</td>
<td>${time(t.createdAt)}</td><td>${time(t.finishedAt)}</td>
<td class="payload"><code>${
              if preview.length > 120 then preview.take(119) + "…" else preview
            }</code></td></tr>"""
        }
        val actions =
          if !v.writable then Html.empty
          else html"""<div class="batch">With the selected tasks:
<button name="action" value="retry">Retry</button> <button name="action" value="cancel">Cancel</button>
<button name="action" value="discard">Discard</button></div>"""
        html"""<form method="post" action="${v.link("tasks/actions")}">${csrfField(v)}$actions
<table class="tasks"><thead><tr><th></th><th>id</th><th>queue</th><th>state</th><th>priority</th><th>key</th>
<th>attempts</th><th>enqueued</th><th>finished</th><th>payload</th></tr></thead><tbody>$trs</tbody></table></form>"""
    val first = Option.when(f.after.isDefined)(
      html"""<p><a href="${v.link("tasks" + query(f.params(withCursor = false)))}">← First page</a></p>"""
    )
    page(v, "Tasks", "tasks")(filters ++ first.getOrElse(Html.empty) ++ body ++ scanned ++ next)

  def task(
      v: View,
      t: TaskDetail,
      neighbours: KeyNeighbours,
      redact: String => String,
      notice: Option[String],
      audit: Vector[AuditEntry]
  ): Html =
    val hs = t.headers
    val headerRows = Html.concat(hs.toVector.sortBy(_._1).map((k, value) =>
      html"<tr><th>$k</th><td><code>$value</code></td></tr>"
    ))
    val trace =
      traceId(hs).fold(Html.empty)(id => html"""<p>Trace id: <code class="trace-id">$id</code></p>""")
    val errors = t.errors
    val errorItems = Html.concat(errors.map { e =>
      val first = e.error.linesIterator.nextOption().getOrElse("")
      val summary = if first.length > 160 then first.take(159) + "…" else first
      val attempt =
        html"""attempt ${e.attempt.fold("?")(_.toString)} · ${e.at.fold("")(_.toString)} · ${worker(
            e.worker
          )}"""
      if !v.details then html"""<li class="error">$attempt · failed</li>"""
      else
        html"""<li class="error"><details><summary>$attempt · <span class="message">$summary</span></summary>
<pre>${e.error}</pre></details></li>"""
    })
    // the attempt the task is in or finished with, when no error entry tells of it
    val current =
      if t.state == TaskState.Running then
        Some(html"""attempt ${t.attempt} · running on ${worker(t.worker)}""")
      else if t.state == TaskState.Completed then
        Some(html"""attempt ${t.attempt} · ${t.finishedAt.fold("")(_.toString)} · ${worker(
            t.worker
          )} · completed""")
      else None
    val attemptItems =
      errorItems ++ current.fold(Html.empty)(c => html"""<li class="attempt-current">$c</li>""")
    val KeyNeighbours(before, after) = neighbours
    def keyRow(n: KeyNeighbour) =
      html"""<li><a href="${v.link("tasks/" + n.id)}">${n.id}</a> ${state(n.state.name)} enqueued ${time(
          n.createdAt
        )}</li>"""
    val keySection = t.key.fold(Html.empty)(k =>
      html"""<section><h2>Key <a href="${v.link("tasks" +
          query(Seq("queue" -> t.queue, "key" -> k)))}">$k</a></h2>
${
          if before.isEmpty && after.isEmpty then
            message("empty", "No other task of this key is waiting or running.")
          else Html.empty
        }
<ol class="neighbours">${Html.concat(
          before.map(keyRow)
        )}<li class="self"><strong>${t.id} (this task)</strong></li>${Html.concat(
          after.map(keyRow)
        )}</ol></section>"""
    )
    val here = v.link(s"tasks/${t.id}")
    val finishedOnly = t.state == TaskState.Dead || t.state == TaskState.Cancelled
    val actions =
      if !v.writable then Html.empty
      else
        val buttons = Vector(
          Option.when(t.state.live)("cancel" -> "Cancel"),
          Option.when(finishedOnly)("retry" -> "Retry"),
          Option.when(finishedOnly)("discard" -> "Discard")
        ).flatten
        Html.concat(buttons.map((verb, label) =>
          html"""<form method="post" action="$here/$verb" class="inline">${csrfField(
              v
            )}<button>$label</button></form> """
        ))
    page(v, s"Task ${t.id}", "tasks")(
      notice.fold(Html.empty)(message("notice", _)) ++
        html"""<dl class="task">
<dt>queue</dt><dd><a href="${v.link("queues/" + encode(t.queue))}">${t.queue}</a></dd>
<dt>state</dt><dd>${state(t.state.name)}${t.cancelRequested.fold(Html.empty)(r =>
            html" (cancel requested: $r)"
          )}</dd>
<dt>priority</dt><dd>${t.priority}</dd>
<dt>attempts</dt><dd>${t.attempt} of ${t.maxAttempts}</dd>
<dt>ordering key</dt><dd>${t.key.getOrElse("–")}</dd><dt>unique key</dt><dd>${t.uniqueKey.getOrElse("–")}</dd>
<dt>enqueued</dt><dd>${time(t.createdAt)}</dd><dt>runs at</dt><dd>${time(t.runAt)}</dd>
<dt>finished</dt><dd>${time(t.finishedAt)}</dd><dt>worker</dt><dd>${t.worker.fold(Html("–"))(w =>
            worker(Some(w))
          )}</dd>${
            t.workflow.fold(Html.empty)(w =>
              html"""<dt>workflow</dt><dd><a class="workflow" href="${v.link("workflows/" +
                  w.value)}">${w.value}</a></dd>"""
            )
          }${
            t.batch.fold(Html.empty)(b =>
              html"""<dt>batch</dt><dd><a class="batch" href="${v.link("batches/" +
                  b.value)}">${b.value}</a></dd>"""
            )
          }
</dl><div class="actions">$actions</div>
<h2>Payload</h2>${
            if v.details then html"""<pre class="payload">${payload(redact, t.payload)}</pre>"""
            else hidden
          }
<h2>Headers</h2>${
            if !v.details then hidden
            else if hs.isEmpty then message("empty", "No headers.")
            else trace ++ html"<table>$headerRows</table>"
          }
<h2>Attempts</h2>${
            if errors.isEmpty && current.isEmpty then
              message("empty", "No attempt has finished or failed yet.")
            else html"""<ol class="errors">$attemptItems</ol>"""
          }
$keySection
${AuditPages.ofTask(v, t.id, audit, TaskPages.auditShown)}"""
    )

  private val hidden: Html = message("note", "Hidden: your access is read-only.")

  /** A worker by id: it may have stopped since, and left the workers' page. */
  private def worker(id: Option[Long]): Html =
    id.fold(Html("worker unknown"))(w => html"""<span class="worker">worker $w</span>""")

  /** What a batch action did to each task. */
  def batchResult(v: View, action: String, outcomes: Vector[(Long, String)]): Html =
    val items = Html.concat(outcomes.map((id, what) =>
      html"""<li><a href="${v.link("tasks/" + id)}">$id</a>: $what</li>"""
    ))
    page(v, s"Tasks: $action", "tasks")(
      html"""<div class="notice" role="status"><ul class="outcomes">$items</ul></div><p><a href="${v.link(
          "tasks"
        )}">Back to the tasks</a></p>"""
    )
