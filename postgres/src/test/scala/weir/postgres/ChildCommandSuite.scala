package weir.postgres

import cats.effect.IO
import munit.CatsEffectSuite

import java.io.{BufferedReader, InputStreamReader}
import scala.concurrent.duration.*

class ChildCommandSuite extends CatsEffectSuite:

  private def silent: IO[Process] = IO.blocking(new ProcessBuilder("sleep", "600").start())

  private def out(p: Process) = new BufferedReader(new InputStreamReader(p.getInputStream))

  test("a child that never says what the read waits for is killed, and the read fails saying so") {
    silent.flatMap { p =>
      ChildCommand.reading(p, out(p), 200.millis)(_.find(_ == "ready")).attempt.map { result =>
        assert(result.left.exists(_.getMessage.contains("child killed")), result)
        assert(!p.isAlive, "the child still runs")
      }
    }
  }

  test("a read that ends in time leaves the child running") {
    IO.blocking(new ProcessBuilder("sh", "-c", "echo ready; sleep 600").start()).flatMap { p =>
      ChildCommand.reading(p, out(p), 30.seconds)(_.find(_ == "ready"))
        .map { found =>
          assertEquals(found, Some("ready"))
          assert(p.isAlive, "the child was killed")
        }
        .guarantee(IO.blocking(p.destroyForcibly().waitFor()).void)
    }
  }
