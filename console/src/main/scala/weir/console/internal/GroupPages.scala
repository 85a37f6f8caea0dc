package weir.console.internal

import weir.console.internal.Html.*
import weir.console.internal.Layout.*
import weir.postgres.{BatchView, TaskState, WorkflowTask, WorkflowView}

/**
 * A workflow's page (its progress and its tasks, grouped by layer from its roots) and a batch's (its
 * progress, its callback, a page of its members), each task linking to its own page, and each with the
 * cancel of what has not ended for an operator who may act.
 */
private[console] object GroupPages:

  /** How many of a workflow's tasks its page lists, the first by id. */
  val tasksShown: Int = 1000

  /** How many of a batch's members a page lists. */
  val membersShown: Int = 200

  private def counts(byState: Map[TaskState, Long]): Html =
    Html.concat(TaskState.values.toVector.flatMap(s =>
      byState.get(s).filter(_ > 0).map(n => html"""<li>${state(s.name)} <span class="n">$n</span></li>""")
    ))

  /** A progress bar of `done` of `total`, with its words for those who cannot see it. */
  private def bar(done: Long, total: Long, what: String): Html =
    html"""<p class="progress"><progress value="$done" max="${total.max(1)}">$done of $total</progress>
$done of $total $what finished</p>"""

  private def cancelForm(v: View, action: String, label: String): Html =
    if !v.writable then Html.empty
    else
      html"""<div class="actions"><form method="post" action="${v.link(action)}" class="inline">${csrfField(
          v
        )}<button>$label</button></form></div>"""

  private def taskLink(v: View, id: Long): Html = html"""<a href="${v.link("tasks/" + id)}">$id</a>"""

  private def row(v: View, t: WorkflowTask, inWorkflow: Set[Long]): Html =
    val parents = Html.concat(t.after.zipWithIndex.map((p, i) =>
      (if i > 0 then Html(", ") else Html.empty) ++
        (if inWorkflow(p) then taskLink(v, p)
         else html"""${taskLink(v, p)} <span class="note">(outside)</span>""")
    ))
    html"""<tr data-task="${t.id}"><td>${taskLink(
        v,
        t.id
      )}</td><td>${t.queue}</td><td>${state(t.state.name)}</td>
<td class="n">${t.attempt}/${t.maxAttempts}</td><td>${
        if t.result then "stored" else "–"
      }</td><td>$parents</td>
<td>${t.batch.fold(Html("–"))(b =>
        html"""<a href="${v.link("batches/" + b.value)}">${b.value}</a>"""
      )}</td></tr>"""

  def workflow(v: View, w: WorkflowView, notice: Option[String]): Html =
    val listed = w.tasks.map(_.id).toSet
    val layers = Html.concat(w.layers.map { tasks =>
      val layer = tasks.headOption.fold(0)(_.layer)
      html"""<tbody class="layer" data-layer="$layer"><tr><th colspan="7" scope="rowgroup">Layer $layer${
          if layer == 0 then " (roots)" else ""
        } · ${tasks.size} task${if tasks.size == 1 then "" else "s"}</th></tr>
${Html.concat(tasks.map(row(v, _, listed)))}</tbody>"""
    })
    val truncated =
      if w.truncated then
        message(
          "note",
          s"Listing the first ${w.tasks.size} of ${w.total} tasks, by id; the counts hold them all."
        )
      else Html.empty
    page(v, s"Workflow ${w.id.value}", "tasks")(
      notice.fold(Html.empty)(message("notice", _)) ++
        html"""<section class="group">${bar(w.finished, w.total, "tasks")}
<ul class="counts">${counts(w.counts)}</ul>${
            if w.ended then message("note", "Every task has ended.")
            else cancelForm(v, s"workflows/${w.id.value}/cancel", "Cancel the unfinished tasks")
          }</section>
<h2>Tasks by layer</h2>$truncated
<table class="workflow"><thead><tr><th>task</th><th>queue</th><th>state</th><th>attempts</th><th>result</th>
<th>waits for</th><th>batch</th></tr></thead>$layers</table>"""
    )

  def batch(v: View, b: BatchView, after: Long, notice: Option[String]): Html =
    val p = b.progress
    val id = p.id.value
    val status =
      if p.ended then html"ended ${time(p.endedAt)}"
      else if p.closed then html"closed ${time(p.closedAt)}, ${p.pending} pending"
      else html"open (members may still be added), ${p.pending} pending"
    val rows = Html.concat(b.members.map(m =>
      html"""<tr data-task="${m.id}"><td>${taskLink(
          v,
          m.id
        )}</td><td>${m.queue}</td><td>${state(m.state.name)}</td>
<td class="n">${m.attempt}/${m.maxAttempts}</td><td>${if m.result then "stored" else "–"}</td>
<td>${m.workflow.fold(Html("–"))(w =>
          html"""<a href="${v.link("workflows/" + w.value)}">${w.value}</a>"""
        )}</td></tr>"""
    ))
    val members =
      if b.members.isEmpty then
        message("empty", if after > 0 then "No member after this one." else "No members.")
      else
        html"""<table class="batch-members"><thead><tr><th>task</th><th>queue</th><th>state</th><th>attempts</th>
<th>result</th><th>workflow</th></tr></thead><tbody>$rows</tbody></table>"""
    val pages =
      Option.when(
        after > 0
      )(html"""<a href="${v.link("batches/" + id)}">← First page</a> """).getOrElse(Html.empty) ++
        b.next.fold(Html.empty)(n =>
          html"""<a rel="next" href="${v.link(s"batches/$id?after=$n")}">Next page →</a>"""
        )
    page(v, s"Batch $id", "tasks")(
      notice.fold(Html.empty)(message("notice", _)) ++
        html"""<section class="group">${bar(p.finished, p.members, "members")}
<ul class="counts"><li>${state("completed")} <span class="n">${p.completed}</span></li>
<li>${state("dead")} <span class="n">${p.dead}</span></li><li>${state(
            "cancelled"
          )} <span class="n">${p.cancelled}</span></li></ul>
<dl class="task"><dt>status</dt><dd>$status</dd><dt>opened</dt><dd>${time(p.createdAt)}</dd>
<dt>callback</dt><dd>${taskLink(v, p.callback)} ${b.callbackState.fold(Html("(its row is gone)"))(s =>
            state(s.name)
          )}</dd></dl>${
            if p.ended then Html.empty
            else cancelForm(v, s"batches/$id/cancel", "Close and cancel the unfinished members")
          }</section>
<h2>Members</h2>$members<p class="pages">$pages</p>"""
    )
