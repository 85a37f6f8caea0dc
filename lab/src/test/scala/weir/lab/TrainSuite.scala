package weir.lab

import munit.FunSuite

/** `./weir train`: the launcher's training runs, and the cache flags the lab passes to its child JVMs. */
class TrainSuite extends FunSuite:

  test("every training run is a valid experiment command line, and train takes no options") {
    assertEquals(Train.checkRuns, Right(()))
    assertEquals(Main.check(List("train")), Right(()))
    assert(Main.check(List("train", "--quick")).isLeft)
    assertEquals(Train.runs.map(_.head), List("compare", "blocking", "requests"))
  }

  test("child JVMs get this JVM's ahead-of-time cache flags, and none without a cache") {
    val flags = List(
      "--sun-misc-unsafe-memory-access=allow",
      "-XX:AOTCache=lab/target/weir-lab.aot",
      "-Xlog:aot*=off",
      "-Xlog:aot*=error:stderr",
      "-Xmx1g"
    )
    assertEquals(
      AotCache.childFlags(flags),
      List("-XX:AOTCache=lab/target/weir-lab.aot", "-Xlog:aot*=off", "-Xlog:aot*=error:stderr")
    )
    assertEquals(AotCache.childFlags(flags.filterNot(_.startsWith("-XX:AOTCache"))), Nil)
    assertEquals(AotCache.childFlags, Nil) // the test JVM has no cache
  }
