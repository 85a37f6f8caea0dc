package weir.cli

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import munit.CatsEffectSuite
import scopt.OptionDef

/**
 * The one dialect of `./weir`, held on every command of a registry (the list the CLI itself runs, not a
 * copy): `--help` exits 0 and lists every option, and every option that takes a value says its default; an
 * unknown option exits 2 naming it; a malformed value exits 2 naming the option and the value; a duration
 * is a number and a unit; an option's name means one thing on every command. Each command runs through
 * the registry as `./weir` would run it, its standard output and error read back.
 */
abstract class EveryCommandSuite(commands: => Commands) extends CatsEffectSuite:

  /** Value names of options that take free text (a path, a URL, a host), where no value is malformed. */
  private val freeText = Set("FILE", "FILE.png", "DIR", "PATH", "URL", "TEXT", "SECRET", "HOST", "NAME")

  private def options(c: Command): List[OptionDef[?, ?]] =
    c.parser.toList.filter(o => o.shortDescription.startsWith("option ") && !o.isHidden && o.name != "help")

  /** Whether `--name` alone is refused for want of its value. */
  private def takesValue(c: Command, o: OptionDef[?, ?]): Boolean =
    c.check(List(s"--${o.name}")).left.exists(_.contains(s"Missing value after --${o.name}"))

  /** `args` run as `./weir args`: its exit code, standard output and standard error. */
  private def weir(args: List[String]): IO[(ExitCode, String, String)] = Captured(commands.run(args))

  test("the registry has commands, each named once") {
    val names = commands.all.map(_.name)
    assert(names.nonEmpty)
    assertEquals(names.distinct, names)
  }

  test("an option's name means one thing: it takes the same kind of value on every command") {
    val byName =
      commands.all.flatMap(c => options(c).map(o => o.name -> (o.valueName.getOrElse("-"), c.name)))
        .groupBy(_._1)
    val mixed = byName.collect {
      case (name, uses) if uses.map(_._2._1).distinct.size > 1 =>
        s"--$name: ${uses.map((_, u) => s"${u._2} takes ${u._1}").mkString(", ")}"
    }
    assert(mixed.isEmpty, mixed.mkString("\n"))
  }

  test("no option takes a number of time units: durations are written 5s, 250ms") {
    val counted =
      for
        c <- commands.all
        o <- options(c)
        if o.name.matches(".*-(ms|s|secs|seconds|minutes)") ||
          o.valueName.exists(Set("MS", "S", "SECONDS", "MINUTES"))
      yield s"${c.name} --${o.name} ${o.valueName.getOrElse("")}"
    assertEquals(counted, Vector.empty)
  }

  test("./weir --help lists every command; ./weir alone exits 2") {
    (weir(List("--help")), weir(Nil)).tupled.map { case ((help, out, _), (bare, _, err)) =>
      assertEquals((help, bare), (ExitCode.Success, ExitCode(2)))
      commands.all.foreach(c => assert(out.contains(s"  ${c.name} "), c.name))
      assert(err.contains("a command is required"), err)
    }
  }

  test("an unknown command exits 2 naming it") {
    weir(List("no-such-command")).map { (code, _, err) =>
      assertEquals(code, ExitCode(2))
      assert(err.contains("'no-such-command'"), err)
    }
  }

  commands.all.foreach { c =>
    test(s"${c.name} --help exits 0 and lists every option; each that takes a value says its default") {
      weir(c.words :+ "--help").map { (code, out, _) =>
        assertEquals(code, ExitCode.Success)
        options(c).foreach { o =>
          assert(out.contains(s"--${o.name}") && out.contains(o.desc), s"--${o.name} not listed:\n$out")
          val value = takesValue(c, o)
          assertEquals(
            o.valueName.isDefined,
            value,
            s"--${o.name}: a value name if and only if it takes a value"
          )
          if value then
            assert(o.desc.contains("default"), s"--${o.name} ${o.valueName.get}: no default in '${o.desc}'")
        }
      }
    }

    test(s"${c.name} refuses an unknown option with exit code 2, naming it") {
      assert(c.check(List("--no-such-option")).left.exists(_.contains("--no-such-option")))
      weir(c.words :+ "--no-such-option").map { (code, _, err) =>
        assertEquals(code, ExitCode(2))
        assert(err.contains("--no-such-option"), err)
      }
    }

    test(s"${c.name} refuses a malformed value with exit code 2, naming the option and the value") {
      // what the command refuses without the option (a missing argument) is not the option's doing
      val before = c.check(Nil).left.toOption.toList.flatMap(_.split("; ")).toSet
      val cases =
        for
          o <- options(c)
          if takesValue(c, o)
          bad <- if o.valueName.contains(Durations.valueName) then List("5", "5 seconds", "bad-value")
          else List("bad-value")
          own =
            c.check(List(s"--${o.name}", bad)).left.toOption.toList.flatMap(_.split("; ")).filterNot(before)
          // free text takes any value; everything else must refuse this one
          if own.nonEmpty || !o.valueName.exists(freeText)
        yield (o.name, bad, own)
      cases.foldLeft(IO.unit) { case (previous, (name, bad, own)) =>
        assert(own.exists(e => e.contains(s"--$name") && e.contains(bad)), s"--$name $bad: $own")
        previous *> weir(c.words ++ List(s"--$name", bad)).map { (code, _, err) =>
          assertEquals(code, ExitCode(2), s"--$name $bad")
          assert(err.contains(s"--$name") && err.contains(bad), s"--$name $bad: $err")
        }
      }
    }
  }
