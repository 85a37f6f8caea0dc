package weir.console.internal

import cats.syntax.all.*

import java.time.{Instant, LocalDateTime, ZoneOffset}
import java.time.format.DateTimeParseException

/** The states a task can be listed in: the live ones of `tasks` and the finished ones of `finished`. */
private[console] enum TaskState(val name: String, val live: Boolean):
  case Available extends TaskState("available", true)
  case Scheduled extends TaskState("scheduled", true)
  case Waiting extends TaskState("waiting", true)
  case Running extends TaskState("running", true)
  case Completed extends TaskState("completed", false)
  case Dead extends TaskState("dead", false)
  case Cancelled extends TaskState("cancelled", false)

private[console] object TaskState:
  def parse(s: String): Option[TaskState] = values.find(_.name == s)

/**
 * The order of the task list, newest first: by enqueue order (the order of the ids, drawn as tasks are
 * enqueued), or by finish time (finished tasks only).
 */
private[console] enum TaskSort(val name: String):
  case Enqueued extends TaskSort("enqueued")
  case Finished extends TaskSort("finished")

private[console] object TaskSort:
  /**
   * The order a list of tasks in `state` has unless asked otherwise: finished ones by finish time, the most
   * recent failures first (and an index range: see [[ConsoleQueries.taskPage]]); others by enqueue time.
   */
  def default(state: Option[TaskState]): TaskSort = if state.exists(!_.live) then Finished else Enqueued

/**
 * A position in the task list: the id of the last task shown, and in finish order its finish time. The
 * next page starts strictly after it, so a page costs an index range however deep it is (keyset
 * pagination, never `OFFSET`). Written `<id>`, or `<finish time in epoch microseconds>.<id>`.
 */
private[console] final case class Cursor(at: Option[Instant], id: Long):
  def render: String = at.fold(id.toString)(t => s"${t.getEpochSecond * 1000000L + t.getNano / 1000}.$id")

private[console] object Cursor:
  def parse(s: String): Option[Cursor] = s.split('.') match
    case Array(i) => i.toLongOption.map(Cursor(None, _))
    case Array(m, i) =>
      (m.toLongOption, i.toLongOption).mapN((micros, id) =>
        Cursor(
          Some(Instant.ofEpochSecond(
            Math.floorDiv(micros, 1000000L),
            Math.floorMod(micros, 1000000L) * 1000L
          )),
          id
        )
      )
    case _ => None

/**
 * The task list's filters, as the query string carries them; every field optional. `from` and `to` bound the
 * sort's time (enqueue or finish), inclusive and exclusive; `oldest` (`first=oldest`) lists the oldest
 * first.
 */
private[console] final case class TaskFilter(
    queue: Option[String] = None,
    state: Option[TaskState] = None,
    key: Option[String] = None,
    priority: Option[Int] = None,
    from: Option[Instant] = None,
    to: Option[Instant] = None,
    text: Option[String] = None,
    sort: TaskSort = TaskSort.Enqueued,
    oldest: Boolean = false,
    after: Option[Cursor] = None
):
  /** The query string of this filter (without the cursor unless `withCursor`), for links and forms. */
  def params(withCursor: Boolean): Vector[(String, String)] =
    Vector(
      queue.map("queue" -> _),
      state.map(s => "state" -> s.name),
      key.map("key" -> _),
      priority.map(p => "priority" -> p.toString),
      from.map(t => "from" -> t.toString),
      to.map(t => "to" -> t.toString),
      text.map("text" -> _),
      Option.when(sort != TaskSort.default(state))("sort" -> sort.name),
      Option.when(oldest)("first" -> "oldest"),
      after.filter(_ => withCursor).map(c => "after" -> c.render)
    ).flatten

private[console] object TaskFilter:

  /**
   * Reads the filters from the query string; empty values count as absent. `Left` names the first
   * malformed parameter and its value.
   */
  def parse(query: Map[String, String]): Either[String, TaskFilter] =
    def param(name: String): Option[String] = query.get(name).map(_.trim).filter(_.nonEmpty)
    def parsed[A](name: String, expected: String)(f: String => Option[A]): Either[String, Option[A]] =
      param(name).traverse(v => f(v).toRight(s"malformed filter $name: '$v' ($expected)"))
    for
      state <- parsed("state", TaskState.values.map(_.name).mkString("one of ", ", ", ""))(TaskState.parse)
      priority <- parsed("priority", "a whole number")(_.toIntOption.filter(p =>
        p >= Short.MinValue && p <= Short.MaxValue
      ))
      from <- parsed("from", "a time such as 2026-01-31T12:00 (UTC) or 2026-01-31T12:00:00Z")(instant)
      to <- parsed("to", "a time such as 2026-01-31T12:00 (UTC) or 2026-01-31T12:00:00Z")(instant)
      sort <- parsed("sort", "enqueued or finished")(s => TaskSort.values.find(_.name == s))
      first <- parsed("first", "newest or oldest")(s => Option.when(s == "newest" || s == "oldest")(s))
      after <- parsed("after", "a position from a previous page")(Cursor.parse)
      order = sort.getOrElse(TaskSort.default(state))
      _ <- after.filter(_.at.isDefined != (order == TaskSort.Finished)).fold(Right(()))(c =>
        Left(s"malformed filter after: '${c.render}' (a position from a page in ${order.name} order)")
      )
    yield TaskFilter(
      queue = param("queue"),
      state = state,
      key = param("key"),
      priority = priority,
      from = from,
      to = to,
      text = param("text"),
      sort = order,
      oldest = first.contains("oldest"),
      after = after
    )

  /** An instant, or a local date-time (what a `datetime-local` input sends) taken as UTC. */
  private def instant(s: String): Option[Instant] =
    try Some(Instant.parse(s))
    catch
      case _: DateTimeParseException =>
        try Some(LocalDateTime.parse(s).toInstant(ZoneOffset.UTC))
        catch case _: DateTimeParseException => None
