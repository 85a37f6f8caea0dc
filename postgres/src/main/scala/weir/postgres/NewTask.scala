package weir.postgres

import weir.Validation

import scala.concurrent.duration.*

/**
 * A task to enqueue: its payload and how it is to run.
 *
 *   - `priority`: lower runs first (default 0); within a priority, earlier run-at first, then enqueue order.
 *   - `delay`: the task is not claimed before the database's clock has moved on by `delay` (default: now).
 *   - `maxAttempts`: attempts in all before the task is dead (default 20, at least 1).
 *   - `orderingKey`: tasks of a queue with the same key run one at a time in enqueue order, whichever
 *     worker claims them (see the guide's per-key section for what a failing head does).
 *   - `uniqueKey`: while a task of the queue with this key has not finished, enqueueing another is a
 *     no-op that returns the holder's id ([[Enqueued.Duplicate]]).
 *   - `headers`: strings stored with the task and handed to its handler as [[Job.headers]] (trace context,
 *     a tenant, a correlation id), kept through retries and rescues. Keys are not empty; keys and values
 *     are text without NUL or a lone surrogate (what PostgreSQL's `jsonb` stores exactly), and together
 *     take at most [[NewTask.maxHeaderBytes]] bytes of UTF-8. No headers (the default) store nothing.
 *   - `after`: the existing tasks, of any queue of the schema, that this one waits for, by id
 *     ([[After.completed]], [[After.finished]]): it is not claimed before each has ended as its entry asks,
 *     and is cancelled, naming the parent, when one it needs completed ends dead or cancelled. A parent
 *     that has already ended counts as it ended; an id that no task of the schema has (or whose row is gone)
 *     fails the enqueue. Each parent at most once. Tasks that wait for each other are enqueued together
 *     as a [[TaskGraph]]. The task joins its parents' workflow ([[WorkflowId]]; the oldest, when they are
 *     in several).
 *
 * Building or copying a task never throws: the enqueue ([[TaskQueue.enqueue]] and its batch and
 * in-transaction forms) checks it ([[errors]]) and fails in its effect, inserting nothing, with one
 * [[weir.InvalidSettings]] naming every bad value.
 */
final case class NewTask[+A](
    payload: A,
    priority: Int = 0,
    delay: FiniteDuration = Duration.Zero,
    maxAttempts: Int = NewTask.defaultMaxAttempts,
    orderingKey: Option[String] = None,
    uniqueKey: Option[String] = None,
    headers: Map[String, String] = Map.empty,
    after: Vector[After[Long]] = Vector.empty
):

  /** What is wrong with this task, each bad value named; empty when it can be enqueued. */
  def errors: List[String] =
    Validation.check(
      priority >= Short.MinValue && priority <= Short.MaxValue,
      s"priority must fit in a smallint, was: $priority"
    ) ++
      Validation.check(delay >= Duration.Zero, s"delay must be >= 0, was: $delay") ++
      Validation.check(maxAttempts >= 1, s"maxAttempts must be >= 1, was: $maxAttempts") ++
      Validation.check(orderingKey.forall(_.nonEmpty), "orderingKey must not be empty, was: \"\"") ++
      Validation.check(uniqueKey.forall(_.nonEmpty), "uniqueKey must not be empty, was: \"\"") ++
      NewTask.headerErrors(headers) ++
      After.twice(after).map(id => s"after names task $id more than once: a task waits for each parent once")

object NewTask:
  /** Attempts in all unless a task says otherwise (the SQL function's default too). */
  val defaultMaxAttempts: Int = 20

  /**
   * The most a task's headers may take, keys and values together, in bytes of UTF-8. Headers are metadata
   * read with every claim of the task, beside up to a claim's worth of others; data belongs in the payload.
   * 8 KiB is the header budget HTTP servers commonly allow a request, which is where such metadata comes
   * from.
   */
  val maxHeaderBytes: Int = 8192

  private def headerErrors(headers: Map[String, String]): List[String] =
    if headers.isEmpty then Nil
    else
      var bytes = 0L
      val each = headers.toList.flatMap { (k, v) =>
        bytes += (if k == null then 0L else utf8Length(k)) + (if v == null then 0L else utf8Length(v))
        if k == null || k.isEmpty then
          List(s"header keys must not be empty, was: ${show(k)} (value ${show(v)})")
        else
          Validation.check(
            isStorable(k),
            s"header keys must be text without NUL or a lone surrogate, was: ${show(k)}"
          ) ++
            (if v == null then List(s"header ${show(k)} must have a value, was: null")
             else
               Validation.check(
                 isStorable(v),
                 s"header ${show(k)} must be text without NUL or a lone surrogate, was: ${show(v)}"
               ))
      }
      each ++ Validation.check(
        bytes <= maxHeaderBytes,
        s"headers must take at most $maxHeaderBytes bytes of UTF-8, keys and values, was: $bytes bytes " +
          s"(keys: ${headers.keys.map(show).mkString(", ")})"
      )

  // jsonb refuses \u0000, and UTF-8 cannot encode half of a surrogate pair (the driver would send '?')
  private def isStorable(s: String): Boolean =
    var i = 0
    var ok = true
    while ok && i < s.length do
      val c = s.charAt(i)
      if c == '\u0000' || Character.isLowSurrogate(c) then ok = false
      else if Character.isHighSurrogate(c) then
        ok = i + 1 < s.length && Character.isLowSurrogate(s.charAt(i + 1))
        i += 1
      i += 1
    ok

  private[postgres] def utf8Length(s: String): Long =
    var n = 0L
    var i = 0
    while i < s.length do
      val c = s.charAt(i)
      n +=
        (if c < 0x80 then 1
         else if c < 0x800 then 2
         else if Character.isHighSurrogate(c) then { i += 1; 4 }
         else 3)
      i += 1
    n

  /** A header key or value for a message: quoted, control characters and surrogates escaped, cut at 100. */
  private def show(s: String | Null): String =
    if s == null then "null"
    else
      val shown = s.take(100).flatMap { c =>
        if c.isControl || c.isSurrogate then f"\\u${c.toInt}%04x" else c.toString
      }
      s"'$shown${if s.length > 100 then "…" else ""}'"

/** What an enqueue did. */
enum Enqueued:
  /** A new task, with its id. */
  case Inserted(id: Long)

  /** Nothing was inserted: the unfinished task `heldBy` holds the same unique key. */
  case Duplicate(heldBy: Long)

  /** The id of the task that now stands for the enqueued one. */
  def taskId: Long = this match
    case Inserted(id) => id
    case Duplicate(heldBy) => heldBy
