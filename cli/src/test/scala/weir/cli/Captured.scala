package weir.cli

import cats.effect.{ExitCode, IO, Resource}

import java.io.{ByteArrayOutputStream, PrintStream}
import java.nio.charset.StandardCharsets.UTF_8

/** A command run with its standard output and standard error captured, as a user sees them. */
object Captured:

  /** `command`'s exit code, standard output and standard error. */
  def apply(command: IO[ExitCode]): IO[(ExitCode, String, String)] =
    val out = new ByteArrayOutputStream
    val err = new ByteArrayOutputStream
    // Cats Effect's Console reads System.out and System.err at each print; suites run one test at a time
    Resource.make(IO {
      val saved = (System.out, System.err)
      System.setOut(new PrintStream(out, true, UTF_8))
      System.setErr(new PrintStream(err, true, UTF_8))
      saved
    })(saved => IO { System.setOut(saved._1); System.setErr(saved._2) })
      .surround(command)
      .map(code => (code, out.toString(UTF_8), err.toString(UTF_8)))
