package weir.console.internal

import weir.console.internal.Html.*
import weir.console.internal.Layout.*
import weir.postgres.{FinishedState, QueueCounts, QueueInfo}

import java.time.Instant

/** A queue as the console shows it: its counts (none when it has no task) and its controls. */
private[console] final case class QueueView(
    name: String,
    counts: Option[QueueCounts],
    controls: Option[QueueInfo]
)

private[console] object QueueView:
  def all(counts: Vector[QueueCounts], infos: Vector[QueueInfo]): Vector[QueueView] =
    (counts.map(_.queue) ++ infos.map(_.name)).distinct.sorted.map(name =>
      QueueView(name, counts.find(_.queue == name), infos.find(_.name == name))
    )

/** The overview (every queue) and a queue's page (the same, plus its controls). */
private[console] object QueuePages:

  /**
   * The queues' table alone, with the counts read at `countedAt`: the overview polls it to stay current
   * without a reload.
   */
  def table(v: View, queues: Vector[QueueView], countedAt: Instant): Html =
    // the oldest task's wait was measured when the counts were read: it has gone on waiting since
    val since = (v.now.toEpochMilli - countedAt.toEpochMilli).max(0L) / 1000.0
    if queues.isEmpty then message("empty", "No queues yet: none has tasks, workers or controls.")
    else
      val rows = queues.map { q =>
        def n(f: QueueCounts => Long) = f"${q.counts.fold(0L)(f)}%,d"
        def c(s: FinishedState) = q.counts.fold("0")(qc => count(qc.finished(s)))
        val paused = if q.controls.exists(_.paused) then
          html"""<span class="state state-paused">paused</span>"""
        else html"active"
        val limit = q.controls.flatMap(_.maxRunning).fold("–")(_.toString)
        val rate = q.controls.flatMap(_.rate).fold("–")(r => s"${r.perSecond}/s, burst ${r.burst}")
        html"""<tr data-queue="${q.name}"><td><a href="${v.link("queues/" +
            encode(q.name))}">${q.name}</a></td>
<td class="n">${n(_.available)}</td><td class="n">${n(_.scheduled)}</td><td class="n">${n(
            _.waiting
          )}</td><td class="n">${n(_.running)}</td>
<td class="n">${c(FinishedState.Completed)}</td><td class="n">${c(FinishedState.Dead)}</td><td class="n">${c(
            FinishedState.Cancelled
          )}</td>
<td class="n">${q.counts.flatMap(_.oldestAvailable).fold("–")(w =>
            age(w.toNanos / 1e9 + since)
          )}</td><td class="paused">$paused</td><td class="n">$limit</td><td>$rate</td></tr>"""
      }
      html"""<table class="queues"><thead><tr><th>queue</th><th>available</th><th>scheduled</th><th title="behind an earlier task of their key">waiting</th><th>running</th>
<th>completed</th><th>dead</th><th>cancelled</th><th>oldest available</th><th>state</th><th>max running</th><th>rate</th></tr></thead>
<tbody>$rows</tbody></table>
<p class="counted">Counted at ${time(countedAt)}.</p>"""

  /** A chart of completed and dead tasks per minute over the last hour, fed by `src` and polled. */
  def chart(src: String): Html =
    html"""<figure class="chart"><div class="throughput" data-src="$src" data-every="5000"></div>
<figcaption>Tasks finished per minute over the last hour: completed and dead (updated every 5 s)</figcaption></figure>"""

  def overview(v: View, queues: Vector[QueueView], countedAt: Instant): Html =
    page(v, "Overview", "")(
      chart(v.link("api/throughput")) ++
        html"""<section data-refresh="${v.link("fragments/queues")}" data-every="5000">${table(
            v,
            queues,
            countedAt
          )}</section>"""
    )

  def queue(v: View, q: QueueView, countedAt: Instant, notice: Option[String]): Html =
    val src = v.link("api/throughput" + query(Seq("queue" -> q.name)))
    val here = v.link("queues/" + encode(q.name))
    val controls = q.controls
    val (verb, label) = if controls.exists(_.paused) then ("resume", "Resume") else ("pause", "Pause")
    val forms =
      if !v.writable then
        message(
          "note",
          if v.caller.mode == Caller.Mode.Host then "Read-only: your access does not let you act."
          else "Read-only: the console was started without an admin token."
        )
      else
        html"""<section class="controls">
<form method="post" action="$here/$verb" class="inline">${csrfField(v)}<button>$label</button></form>
<form method="post" action="$here/limit">${csrfField(v)}
<label>Max running <input name="max_running" type="number" min="1" value="${controls.flatMap(
            _.maxRunning
          )}" placeholder="none"></label>
<label>Rate per second <input name="rate" type="number" min="0" step="any" value="${controls.flatMap(
            _.rate
          ).map(_.perSecond)}" placeholder="none"></label>
<label>Burst <input name="burst" type="number" min="1" value="${controls.flatMap(
            _.rate
          ).map(_.burst)}" placeholder="1 s worth"></label>
<button>Set limits</button> <small>(an empty field removes the limit)</small></form></section>"""
    page(v, s"Queue ${q.name}", "")(
      notice.fold(Html.empty)(message("notice", _)) ++ table(v, Vector(q), countedAt) ++ forms ++
        chart(src) ++
        html"""<p><a href="${v.link("tasks" + query(Seq("queue" -> q.name)))}">Tasks of ${q.name}</a> ·
<a href="${v.link("tasks" + query(Seq("queue" -> q.name, "state" -> "dead")))}">dead ones</a></p>"""
    )
