package weir

class IdealScheduleSuite extends munit.FunSuite:
  test("one slot runs tasks back to back, waiting for late arrivals") {
    assertEquals(IdealSchedule.makespan(Seq(0, 0, 10), Seq(3, 4, 1), 1), 11L)
  }
  test("enough slots: the makespan is the latest arrival plus its duration") {
    assertEquals(IdealSchedule.makespan(Seq(0, 5, 5), Seq(7, 1, 2), 3), 7L)
  }
  test("a freed slot goes to the next task in arrival order") {
    // slots free at 2 and 5; task 2 (dur 4) takes the slot freed at 2
    assertEquals(IdealSchedule.makespan(Seq(0, 0, 0), Seq(2, 5, 4), 2), 6L)
  }
