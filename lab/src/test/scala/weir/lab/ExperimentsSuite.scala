package weir.lab

import cats.effect.ExitCode
import munit.CatsEffectSuite

/** The one registry behind `./weir lab <name>`, `./weir compare` and the help texts. */
class ExperimentsSuite extends CatsEffectSuite:

  test("compare is an experiment of the registry, beside the others, each name once") {
    val names = Experiments.all.map(_.name)
    assertEquals(names.take(1), Vector("compare"))
    assert(
      Set("channels", "blocking", "trampoline", "requests", "adaptive", "durable").subsetOf(names.toSet),
      names
    )
    assertEquals(names.distinct, names)
  }

  test("the lab's usage lists every registered experiment") {
    Experiments.all.foreach(e => assert(Experiments.usage.contains(s"${e.name} "), e.name))
  }

  test("`compare` is a shortcut of `lab compare`, for checks and for errors") {
    assertEquals(Main.check(List("compare", "--quick")), Right(()))
    assertEquals(
      Main.check(List("compare", "--runs", "0")),
      Experiments.check(List("compare", "--runs", "0"))
    )
    assert(Main.check(List("compare", "--runs", "0")).isLeft)
    for
      shortcut <- Main.run(List("compare", "--approaches", "nosuch"))
      full <- Main.run(List("lab", "compare", "--approaches", "nosuch"))
    yield assertEquals((shortcut, full), (ExitCode(2), ExitCode(2)))
  }

  test("every experiment checks its own options without running") {
    Experiments.all.foreach { e =>
      assertEquals(e.check(List("--help")), Right(()), e.name)
      assert(e.check(List("--no-such-option")).isLeft, e.name)
    }
  }
