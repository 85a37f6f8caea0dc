package weir.lab.durable

import munit.FunSuite

/** The kill run's rule for a repeated task: only the kill of the worker that ran it before explains it. */
class UnexplainedRepeatsSuite extends FunSuite:

  // worker 1 is killed at 1,000 ms; worker 2 is never killed
  private val kills = Vector(KillPhase.Kill(1L, 1000.0, sessionHeld = true, othersAlive = 1))
  private def run(task: Long, worker: Long, at: Double) = (task, worker, None, at)

  test("a repeat after the kill of the worker that ran the task before is explained") {
    assertEquals(KillPhase.unexplained(Vector(run(7, 1, 900), run(7, 2, 1800)), kills), Vector.empty)
  }

  test(
    "so is one whose first run was recorded after the lab read the clock, if the repeat followed the kill"
  ) {
    assertEquals(KillPhase.unexplained(Vector(run(7, 1, 1070), run(7, 2, 1800)), kills), Vector.empty)
  }

  test("a repeat that started before the kill, or of a worker never killed, is not") {
    val found = KillPhase.unexplained(
      Vector(run(7, 1, 100), run(8, 2, 200), run(7, 2, 900), run(8, 1, 950), run(9, 2, 300)),
      kills
    )
    assertEquals(found.size, 2)
    assert(found(0).startsWith("task 7: run on worker 1 at 100.0, again on worker 2 at 900.0"), found(0))
    assert(found(0).endsWith("(worker killed at 1000.0)"), found(0))
    assert(
      found(1).startsWith("task 8: run on worker 2") && found(1).endsWith("(worker never killed)"),
      found(1)
    )
  }

  test("a task run three times needs each repeat explained") {
    val runs = Vector(run(5, 1, 500), run(5, 2, 1500), run(5, 2, 1600))
    assertEquals(KillPhase.unexplained(runs, kills).size, 1)
  }

  // the server is stopped at 2,000 ms and answers again at 3,000 ms
  private val restarts = Vector(KillPhase.Restart(2000.0, 3000.0))

  test("a repeat across a restart is explained: the earlier run began before the server was back") {
    val runs = Vector(run(7, 2, 1900), run(7, 2, 3200), run(8, 2, 2500), run(8, 2, 3100))
    assertEquals(KillPhase.unexplained(runs, kills, restarts), Vector.empty)
    assertEquals(KillPhase.repeatsAfterRestart(runs, kills, restarts), 2L)
  }

  test("a repeat begun before the restart, or whose earlier run began after it, is not") {
    val runs = Vector(run(7, 2, 1500), run(7, 2, 1800), run(8, 2, 3100), run(8, 2, 3500))
    val found = KillPhase.unexplained(runs, kills, restarts)
    assertEquals(found.size, 2, found)
    assertEquals(KillPhase.repeatsAfterRestart(runs, kills, restarts), 0L)
  }

  test("a repeat explained by a kill is not counted as the restart's") {
    assertEquals(KillPhase.repeatsAfterRestart(Vector(run(7, 1, 900), run(7, 2, 3500)), kills, restarts), 0L)
  }
