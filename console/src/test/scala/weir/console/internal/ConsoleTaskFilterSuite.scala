package weir.console.internal

import munit.FunSuite
import weir.console.internal.TaskFilter.params
import weir.postgres.{TaskCursor, TaskQuery, TaskSort, TaskState}

/** The task list's query string: parsed, refused with the bad value, and written back. */
class ConsoleTaskFilterSuite extends FunSuite:

  test("a filter survives its own query string, and empty values are absent") {
    val query = Map(
      "queue" -> "emails",
      "state" -> "dead",
      "key" -> "user 1",
      "priority" -> "-3",
      "from" -> "2026-01-31T12:00",
      "to" -> "2026-02-01T00:00:00Z",
      "text" -> "ada",
      "sort" -> "finished",
      "first" -> "oldest",
      "after" -> "1769860800000000.42",
      "ignored" -> "x"
    )
    val f = TaskFilter.parse(query).fold(fail(_), identity)
    assertEquals(f.state, Some(TaskState.Dead))
    assert(f.oldest)
    assertEquals(f.from.map(_.toString), Some("2026-01-31T12:00:00Z"))
    assertEquals(f.after, Some(TaskCursor(Some(java.time.Instant.parse("2026-01-31T12:00:00Z")), 42L)))
    assertEquals(TaskFilter.parse(f.params(withCursor = true).toMap), Right(f))
    assertEquals(f.params(withCursor = false).map(_._1).contains("after"), false)
    assertEquals(TaskFilter.parse(Map("queue" -> " ", "state" -> "")), Right(TaskQuery()))
  }

  test("a malformed value is refused, naming the parameter and the value") {
    assertEquals(
      TaskFilter.parse(Map("priority" -> "99999")).left.map(_.take(32)),
      Left("malformed filter priority: '9999")
    )
    assert(TaskFilter.parse(Map("after" -> "1.2.3")).left.exists(_.contains("'1.2.3'")))
    assert(TaskFilter.parse(Map("to" -> "tomorrow")).left.exists(_.contains("to: 'tomorrow'")))
    assert(TaskFilter.parse(Map("first" -> "latest")).left.exists(_.contains("first: 'latest'")))
    assertEquals(TaskFilter.parse(Map("first" -> "newest")), Right(TaskQuery()))
    // a position of one order given to the other
    assert(TaskFilter.parse(Map("after" -> "17.42")).left.exists(_.contains("after: '17.42'")))
    assert(TaskFilter.parse(Map(
      "after" -> "42",
      "sort" -> "finished"
    )).left.exists(_.contains("after: '42'")))
  }

  test("a finished state lists by finish time unless asked otherwise, and its links say no more") {
    val dead = TaskFilter.parse(Map("state" -> "dead")).fold(fail(_), identity)
    assertEquals(dead.sort, TaskSort.Finished)
    assertEquals(dead.params(withCursor = false), Vector("state" -> "dead"))
    val byEnqueue = TaskFilter.parse(Map("state" -> "dead", "sort" -> "enqueued")).fold(fail(_), identity)
    assertEquals(byEnqueue.params(withCursor = false), Vector("state" -> "dead", "sort" -> "enqueued"))
    assertEquals(TaskFilter.parse(Map("state" -> "running")).map(_.sort), Right(TaskSort.Enqueued))
  }

  test("a cursor is the id, and in finish order the finish time in microseconds before it") {
    val at = java.time.Instant.parse("2026-01-31T12:00:00.123456Z")
    val c = TaskCursor(Some(at), 7L)
    assertEquals(c.render, "1769860800123456.7")
    assertEquals(TaskCursor.parse(c.render), Some(c))
    assertEquals(TaskCursor(None, 7L).render, "7")
    assertEquals(TaskCursor.parse("7"), Some(TaskCursor(None, 7L)))
  }
