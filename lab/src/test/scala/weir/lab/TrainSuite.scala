package weir.lab

import munit.FunSuite

/** `./weir train`: the launcher's training runs are command lines the experiments accept. */
class TrainSuite extends FunSuite:

  test("every training run is a valid experiment command line, and train takes no options") {
    assertEquals(Train.check, Right(()))
    assertEquals(Main.check(List("train")), Right(()))
    assert(Main.check(List("train", "--quick")).isLeft)
    assertEquals(Train.runs.map(_.head), List("compare", "blocking", "requests"))
  }
