package weir.console.internal

import weir.console.internal.Html.*
import weir.console.internal.Layout.*
import weir.postgres.{KeyBacklog, ScheduleInfo, WorkerInfo}

/** The pages of keys, workers and schedules, and the login form. */
private[console] object OtherPages:

  def keys(v: View, rows: Vector[KeyBacklog], limit: Int): Html =
    val body =
      if rows.isEmpty then message("empty", "No ordering key has tasks waiting.")
      else
        val trs = rows.map { k =>
          val blocked =
            if k.blocked then html"""<span class="state state-dead">blocked</span>""" else html"flowing"
          html"""<tr data-key="${k.key}"><td>${k.queue}</td>
<td><a href="${v.link("tasks" + query(Seq("queue" -> k.queue, "key" -> k.key)))}">${k.key}</a></td>
<td class="n">${count(k.backlog)}</td><td><a href="${v.link(
              "tasks/" + k.head
            )}">${k.head}</a> ${state(
              k.headState.name
            )}</td>
<td class="n">${k.headAttempt}</td><td class="n">${since(v, k.headCreatedAt)}</td><td>$blocked</td></tr>"""
        }
        html"""<table class="keys"><thead><tr><th>queue</th><th>key</th><th>backlog</th><th>head task</th><th>head's attempts</th>
<th>head waiting for</th><th></th></tr></thead><tbody>$trs</tbody></table>
${if rows.size >= limit then message("note", s"The first $limit keys.") else Html.empty}"""
    page(v, "Keys", "keys")(
      html"""<p>A key's tasks run one at a time, in order. A key is blocked when its head has failed and others wait behind it.</p>""" ++
        body
    )

  def workers(v: View, rows: Vector[WorkerInfo]): Html =
    val body =
      if rows.isEmpty then message("empty", "No worker is registered.")
      else
        val trs = rows.map(w =>
          html"""<tr data-worker="${w.id}"><td class="n">${w.id}</td><td>${w.name}</td><td>${time(
              w.startedAt
            )}</td>
<td>${time(w.heartbeatAt)} (${since(v, w.heartbeatAt)} ago)</td><td>${
              if w.sessionHeld then "yes" else "no"
            }</td>
<td class="n">${w.running}</td></tr>"""
        )
        html"""<table class="workers"><thead><tr><th>id</th><th>name</th><th>started</th><th>last heartbeat</th>
<th>session held</th><th>running</th></tr></thead><tbody>$trs</tbody></table>"""
    page(v, "Workers", "workers")(body)

  def schedules(v: View, rows: Vector[ScheduleInfo]): Html =
    val body =
      if rows.isEmpty then message("empty", "No schedule is declared.")
      else
        val trs = rows.map(s =>
          html"""<tr data-schedule="${s.name}"><td>${s.name}</td><td><a href="${v.link("queues/" +
              encode(s.queue))}">${s.queue}</a></td>
<td>${s.timing.toString}</td><td>${s.missed.toString}</td><td>${time(s.lastTick)}</td><td>${time(
              s.nextTick
            )}</td>
<td class="n">${s.ticks}</td></tr>"""
        )
        html"""<table class="schedules"><thead><tr><th>schedule</th><th>queue</th><th>timing</th><th>missed ticks</th>
<th>last tick</th><th>next tick</th><th>ticks</th></tr></thead><tbody>$trs</tbody></table>"""
    page(v, "Schedules", "schedules")(body)

  def login(v: View, error: Option[String]): Html =
    page(v, "Log in", "")(
      error.fold(Html.empty)(message("error", _)) ++
        html"""<form method="post" action="${v.link("login")}" class="login"><label>Your name
<input name="operator" autocomplete="username" maxlength="200" placeholder="recorded with your actions"></label>
<label>Admin token <input name="token" type="password" autocomplete="current-password" required></label>
<button>Log in</button></form>"""
    )

  def problem(v: View, title: String, detail: String): Html =
    page(v, title, "")(message("error", detail) ++ html"""<p><a href="${v.link("")}">Overview</a></p>""")
