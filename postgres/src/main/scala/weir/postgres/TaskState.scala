package weir.postgres

/**
 * The states of a task: weir-postgres' one vocabulary, which its statements, [[FinishedState]], the
 * [[TaskBrowser]] and the console all read from here. `name` is the text the schema stores and every read
 * returns; `live` says which table holds the task.
 *
 * A live task is a row of `tasks`, stored `available`, `waiting` (for its parents: [[NewTask.after]]) or
 * `running` (the type `task_state`). Two kinds of available task are told apart when read: `waiting` too,
 * behind an earlier task of its ordering key (its `head` mark unset: the claim skips it), and `scheduled`,
 * due later (a delayed task, or a failed one waiting for its retry's backoff), never stored. A finished
 * task is a row of `finished`, stored as its [[FinishedState]] (the type `finished_state`).
 */
enum TaskState(val name: String, val live: Boolean):
  /** Due now and free to claim. */
  case Available extends TaskState("available", true)

  /** Available, due later. */
  case Scheduled extends TaskState("scheduled", true)

  /** Waiting for its parents to end, or available behind an earlier task of its ordering key. */
  case Waiting extends TaskState("waiting", true)

  /** Claimed by a worker and not finished. */
  case Running extends TaskState("running", true)
  case Completed extends TaskState("completed", false)

  /** Failed its last attempt. */
  case Dead extends TaskState("dead", false)
  case Cancelled extends TaskState("cancelled", false)

  /** Whether the schema stores this name; `scheduled` is read from an available task. */
  def stored: Boolean = this != Scheduled

object TaskState:

  /** The state named `name`, as [[TaskState.name]] spells it. */
  def parse(name: String): Option[TaskState] = values.find(_.name == name)
