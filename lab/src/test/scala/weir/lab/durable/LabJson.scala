package weir.lab.durable

import cats.effect.{ExitCode, IO}

import java.nio.file.Files

/** A durable lab run as its command line has it, with `--json` to a temporary file: its exit code and the JSON. */
object LabJson:
  def run(name: String, args: List[String]): IO[(ExitCode, String)] =
    IO.blocking(Files.createTempFile(name, ".json")).flatMap { file =>
      DurableLab.run(args ++ List("--json", file.toString))
        .flatMap(code => IO.blocking(Files.readString(file)).map(text => (code, text)))
        .guarantee(IO.blocking(Files.deleteIfExists(file)).void)
    }
