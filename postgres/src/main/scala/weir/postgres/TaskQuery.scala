package weir.postgres

import cats.syntax.all.*
import weir.Validation

import java.time.Instant

/**
 * Which tasks a page of [[TaskBrowser.tasks]] lists, live and finished alike, and in which order; every
 * filter optional, all of them required at once:
 *
 * @param queue the tasks of this queue
 * @param state the tasks in this state, as [[TaskState]] names it (`waiting` and `scheduled` included)
 * @param key the tasks of this ordering key
 * @param priority the tasks of this priority (a `smallint`: -32768 to 32767)
 * @param from the tasks whose time in the list's order (enqueue or finish) is at or after this one
 * @param to and before this one
 * @param text the tasks whose payload's JSON text holds this text, whatever its case
 * @param sort the list's order: by enqueue order or by finish time ([[TaskSort]])
 * @param oldest oldest first, rather than newest first
 * @param after the page starts strictly after this position, a previous page's [[TaskPage.next]]
 *
 * Building one throws nothing: [[TaskBrowser.tasks]] checks it ([[errors]]).
 */
final case class TaskQuery(
    queue: Option[String] = None,
    state: Option[TaskState] = None,
    key: Option[String] = None,
    priority: Option[Int] = None,
    from: Option[Instant] = None,
    to: Option[Instant] = None,
    text: Option[String] = None,
    sort: TaskSort = TaskSort.Enqueued,
    oldest: Boolean = false,
    after: Option[TaskCursor] = None
):

  /** What is wrong with this query, each value named; empty when it is valid. */
  def errors: List[String] =
    priority.toList.flatMap(p =>
      Validation.check(
        p >= Short.MinValue && p <= Short.MaxValue,
        s"priority must be in ${Short.MinValue}..${Short.MaxValue}, was: $p"
      )
    ) ++ after.toList.flatMap(c =>
      Validation.check(
        c.at.isDefined == (sort == TaskSort.Finished),
        s"after must be a position in ${sort.name} order (${
            if sort == TaskSort.Finished then "with" else "without"
          } a finish time), was: ${c.render}"
      )
    )

/**
 * The order of the task list: by enqueue order (the order of the ids, drawn as tasks are enqueued), or by
 * finish time (finished tasks only), each with its id to break ties.
 */
enum TaskSort(val name: String):
  case Enqueued extends TaskSort("enqueued")
  case Finished extends TaskSort("finished")

object TaskSort:

  def parse(name: String): Option[TaskSort] = values.find(_.name == name)

  /**
   * The order a list of tasks in `state` reads best in: finished ones by finish time, the most recent
   * failures first, and each page one range of an index per queue; others by enqueue order.
   */
  def default(state: Option[TaskState]): TaskSort = if state.exists(!_.live) then Finished else Enqueued

/**
 * A position in the task list: the id of the last task shown, and in finish order its finish time. A page
 * starts strictly after it, so a page costs an index range however deep it is (keyset pagination, never
 * `OFFSET`). Its text form, for a link to the next page ([[render]], [[TaskCursor.parse]]): `<id>`, or
 * `<finish time in epoch microseconds>.<id>`.
 */
final case class TaskCursor(at: Option[Instant], id: Long):
  def render: String = at.fold(id.toString)(t => s"${t.getEpochSecond * 1000000L + t.getNano / 1000}.$id")

object TaskCursor:

  /** The position [[TaskCursor.render]] wrote; `None` for any other text. */
  def parse(s: String): Option[TaskCursor] = s.split('.') match
    case Array(i) => i.toLongOption.map(TaskCursor(None, _))
    case Array(m, i) =>
      (m.toLongOption, i.toLongOption).mapN((micros, id) =>
        TaskCursor(
          Some(Instant.ofEpochSecond(
            Math.floorDiv(micros, 1000000L),
            Math.floorMod(micros, 1000000L) * 1000L
          )),
          id
        )
      )
    case _ => None
