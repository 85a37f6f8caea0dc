package weir.console.internal

import cats.syntax.all.*
import weir.console.internal.Html.*
import weir.console.internal.Layout.*
import weir.postgres.{AuditEntry, AuditFilter, AuditOutcome}

/** The audit log's page, filtered and in keyset pages, and the entries a task's page shows. */
private[console] object AuditPages:

  /** The filter of the audit page's query: each value trimmed, empty ones ignored; a bad id names itself. */
  def parse(query: Map[String, String]): Either[String, AuditFilter] =
    def param(name: String) = query.get(name).map(_.trim).filter(_.nonEmpty)
    def id(name: String) =
      param(name).traverse(v =>
        v.toLongOption.filter(_ > 0).toRight(s"$name must be a whole number > 0, was: '$v'")
      )
    (id("task"), id("before")).mapN((task, before) =>
      AuditFilter(param("operator"), param("queue"), task, before)
    )

  private def params(f: AuditFilter): Vector[(String, String)] =
    Vector(
      f.operator.map("operator" -> _),
      f.queue.map("queue" -> _),
      f.task.map(t => "task" -> t.toString)
    ).flatten

  private def outcome(o: AuditOutcome): Html =
    val kind = o match
      case AuditOutcome.Done | AuditOutcome.Requested => "completed"
      case AuditOutcome.Refused | AuditOutcome.NotFound => "dead"
    html"""<span class="state state-$kind">${o.name}</span>"""

  /** The entries as a table, each linking to its queue and task. */
  def table(v: View, entries: Vector[AuditEntry]): Html =
    val rows = entries.map { e =>
      val queue = e.queue.fold(Html("–"))(q => html"""<a href="${v.link("queues/" + encode(q))}">$q</a>""")
      val task = e.task.fold(Html("–"))(t => html"""<a href="${v.link("tasks/" + t)}">$t</a>""")
      html"""<tr data-entry="${e.id}"><td>${time(e.at)}</td><td class="operator">${e.operator.name}</td>
<td>${e.operator.session.getOrElse(
          "–"
        )}</td><td class="action">${e.action.name}</td><td>$queue</td><td>$task</td>
<td class="outcome">${outcome(e.outcome)}</td><td>${e.detail.getOrElse("")}</td></tr>"""
    }
    html"""<table class="audit"><thead><tr><th>at</th><th>operator</th><th>session</th><th>action</th><th>queue</th>
<th>task</th><th>outcome</th><th>detail</th></tr></thead><tbody>$rows</tbody></table>"""

  /** The audit page: the filter form, a page of entries, and the link to the next, older page. */
  def list(v: View, f: AuditFilter, entries: Vector[AuditEntry], full: Boolean): Html =
    val form = html"""<form method="get" action="${v.link("audit")}" class="filters">
<input name="operator" placeholder="operator" value="${f.operator}">
<input name="queue" placeholder="queue" value="${f.queue}">
<input name="task" placeholder="task id" size="10" value="${f.task}">
<button>Filter</button></form>"""
    val body =
      if entries.isEmpty then message("empty", "No action is recorded here.") else table(v, entries)
    val older = Option.when(full)(entries.lastOption).flatten.fold(Html.empty)(last =>
      html"""<p><a rel="next" href="${v.link("audit" +
          query(params(f) :+ ("before" -> last.id.toString)))}">Older →</a></p>"""
    )
    val newest = Option.when(f.before.isDefined)(
      html"""<p><a href="${v.link("audit" + query(params(f)))}">← Newest</a></p>"""
    )
    page(v, "Audit", "audit")(
      html"""<p>Every action taken on the queues and tasks, by whom and with what outcome, newest first.</p>""" ++
        form ++ newest.getOrElse(Html.empty) ++ body ++ older
    )

  /** A task's own entries on its page, with a link to all of them. */
  def ofTask(v: View, task: Long, entries: Vector[AuditEntry], shown: Int): Html =
    val all = html"""<a href="${v.link("audit" + query(Vector("task" -> task.toString)))}">all of them</a>"""
    html"""<section class="task-audit"><h2>Actions</h2>${
        if entries.isEmpty then message("empty", "No action has been taken on this task.")
        else
          table(v, entries) ++
            (if entries.size >= shown then html"""<p>The last $shown: $all.</p>""" else Html.empty)
      }</section>"""
