package weir.console.internal

import cats.syntax.all.*
import weir.postgres.{TaskCursor, TaskQuery, TaskSort, TaskState}

import java.time.{Instant, LocalDateTime, ZoneOffset}
import java.time.format.DateTimeParseException

/**
 * The task list's filters as the query string carries them, every one optional: a [[TaskQuery]], read
 * from the parameters and written back for links and forms. `from` and `to` bound the sort's time (enqueue
 * or finish), inclusive and exclusive; `first=oldest` lists the oldest first; `after` is a page's position
 * ([[TaskCursor.render]]); `sort` is written only when it is not the state's own order.
 */
private[console] object TaskFilter:

  extension (q: TaskQuery)
    /** The query string of `q` (without the cursor unless `withCursor`), for links and forms. */
    def params(withCursor: Boolean): Vector[(String, String)] =
      Vector(
        q.queue.map("queue" -> _),
        q.state.map(s => "state" -> s.name),
        q.key.map("key" -> _),
        q.priority.map(p => "priority" -> p.toString),
        q.from.map(t => "from" -> t.toString),
        q.to.map(t => "to" -> t.toString),
        q.text.map("text" -> _),
        Option.when(q.sort != TaskSort.default(q.state))("sort" -> q.sort.name),
        Option.when(q.oldest)("first" -> "oldest"),
        q.after.filter(_ => withCursor).map(c => "after" -> c.render)
      ).flatten

  /**
   * Reads the filters from the query string; empty values count as absent. `Left` names the first
   * malformed parameter and its value.
   */
  def parse(query: Map[String, String]): Either[String, TaskQuery] =
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
      sort <- parsed("sort", "enqueued or finished")(TaskSort.parse)
      first <- parsed("first", "newest or oldest")(s => Option.when(s == "newest" || s == "oldest")(s))
      after <- parsed("after", "a position from a previous page")(TaskCursor.parse)
      order = sort.getOrElse(TaskSort.default(state))
      _ <- after.filter(_.at.isDefined != (order == TaskSort.Finished)).fold(Right(()))(c =>
        Left(s"malformed filter after: '${c.render}' (a position from a page in ${order.name} order)")
      )
    yield TaskQuery(
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
