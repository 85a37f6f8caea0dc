package weir.lab

import cats.effect.ExitCode
import munit.CatsEffectSuite

/** The lab's registry behind `./weir lab <name>`, `./weir compare` and the help texts. */
class ExperimentsSuite extends CatsEffectSuite:

  test("compare is an experiment of the registry, beside the others, each name once") {
    val labels = Experiments.all.map(_.label)
    assertEquals(labels.take(1), Vector("compare"))
    assert(
      Set("channels", "blocking", "trampoline", "requests", "adaptive", "durable", "heap", "example")
        .subsetOf(labels.toSet),
      labels
    )
    assertEquals(labels.distinct, labels)
    assertEquals(Experiments.all.map(_.words), labels.map(l => List("lab", l)))
  }

  test("the lab's registry holds every experiment, the operator's commands, compare and train") {
    val names = Main.commands.all.map(_.name).toSet
    assert(Experiments.all.map(_.name).toSet.subsetOf(names))
    assert(weir.cli.Main.operatorCommands.map(_.name).toSet.subsetOf(names))
    assert(Set("compare", "train", "durable migrate", "console").subsetOf(names), names)
    assert(Main.commands.usage(List("lab")).linesIterator.drop(2).forall(_.trim.startsWith("lab ")))
  }

  test("`compare` is a shortcut of `lab compare`, for checks and for errors") {
    assertEquals(Main.check(List("compare", "--quick")), Right(()))
    assertEquals(
      Main.check(List("compare", "--runs", "0")).left.map(_.stripPrefix("compare: ")),
      Main.check(List("lab", "compare", "--runs", "0")).left.map(_.stripPrefix("lab compare: "))
    )
    assert(Main.check(List("compare", "--runs", "0")).isLeft)
    for
      shortcut <- Main.run(List("compare", "--approaches", "nosuch"))
      full <- Main.run(List("lab", "compare", "--approaches", "nosuch"))
    yield assertEquals((shortcut, full), (ExitCode(2), ExitCode(2)))
  }

  test("lab alone and an unknown experiment are refused; lab --help lists the experiments") {
    assert(Main.check(List("lab")).isLeft)
    assert(Main.check(List("lab", "nosuch")).left.exists(_.contains("'lab nosuch'")))
    assertEquals(Main.check(List("lab", "--help")), Right(()))
    for
      bare <- Main.run(List("lab"))
      unknown <- Main.run(List("lab", "nosuch"))
      help <- Main.run(List("lab", "--help"))
    yield assertEquals((bare, unknown, help), (ExitCode(2), ExitCode(2), ExitCode.Success))
  }
