package weir

import munit.CatsEffectSuite

import scala.concurrent.duration.*

/**
 * Memory stays bounded however many tasks flow: millions of lazily generated tasks through a heap far too
 * small to hold them (3 M tasks as boxed Longs plus their outcomes would need several hundred MB). The
 * full check, 10 M tasks in 256 MB, is `JAVA_OPTS=-Xmx256m ./weir lab heap --tasks 10000000`.
 */
class MemorySuite extends CatsEffectSuite:
  override def munitIOTimeout: Duration = 3.minutes

  test("3 million no-op tasks finish in a 64 MB heap") {
    ChildJvm.run("weir.MemoryProbe", List("-Xmx64m"), List("3000000"), 150.seconds).map { r =>
      assertEquals(
        r.out.lastOption,
        Some("OK succeeded=3000000"),
        s"exit ${r.exitCode}; ${r.err.takeRight(5)}"
      )
      assertEquals(r.exitCode, Some(0))
    }
  }

  test(
    "3 million failing tasks finish in a 64 MB heap: the summary keeps the last 100 failures, counts them all"
  ) {
    ChildJvm.run("weir.MemoryProbe", List("-Xmx64m"), List("3000000", "fail"), 150.seconds).map { r =>
      assertEquals(
        r.out.lastOption,
        Some(s"OK failed=3000000 kept=${Defaults.failureSample}"),
        s"exit ${r.exitCode}; ${r.err.takeRight(5)}"
      )
      assertEquals(r.exitCode, Some(0))
    }
  }
