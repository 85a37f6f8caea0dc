package weir.lab.requests

import cats.effect.{IO, Resource}
import cats.effect.testkit.TestControl
import cats.effect.unsafe.IORuntime
import com.comcast.ip4s.{Host, Port}
import fs2.Chunk
import fs2.io.net.Network
import munit.CatsEffectSuite
import weir.runtime.WeirRuntime

import java.net.Socket
import java.nio.charset.StandardCharsets
import scala.concurrent.duration.*

/** The server's socket group, both ways of accepting: selector-polled channels and NIO2 channels. */
class WideBacklogSocketGroupSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 30.seconds
  override implicit lazy val munitIORuntime: IORuntime = WeirRuntime.unsafeCreate()._1

  private def roundTrip(polled: Boolean): IO[(String, String)] =
    val group = new WideBacklogSocketGroup(64, Network[IO], polled)
    group.serverResource(Host.fromString("127.0.0.1"), Port.fromInt(0), Nil).use { (address, sockets) =>
      val serve = sockets.head.evalMap { s =>
        s.read(16).flatMap(got => s.write(Chunk.array("pong".getBytes(StandardCharsets.US_ASCII))).as(got))
      }.compile.lastOrError
      val client = IO.blocking {
        val socket = new Socket("127.0.0.1", address.port.value)
        try
          socket.getOutputStream.write("ping".getBytes(StandardCharsets.US_ASCII))
          new String(socket.getInputStream.readNBytes(4), StandardCharsets.US_ASCII)
        finally socket.close()
      }
      IO.both(serve, client).map((got, answer) =>
        (got.fold("nothing")(c => new String(c.toArray, StandardCharsets.US_ASCII)), answer)
      )
    }

  test("selector-polled: an accepted connection reads and writes") {
    roundTrip(polled = true).map(r => assertEquals(r, ("ping", "pong")))
  }

  test("NIO2 (no selector): an accepted connection reads and writes") {
    roundTrip(polled = false).map(r => assertEquals(r, ("ping", "pong")))
  }

  test("a non-positive backlog is refused, naming the value") {
    val _ = interceptMessage[IllegalArgumentException]("requirement failed: backlog must be > 0, was: 0")(
      new WideBacklogSocketGroup(0, Network[IO])
    )
  }

  test("failed accepts on an open server socket are retried after a pause that doubles up to 1 s") {
    // every accept fails, in virtual time: attempts at 0 and 0 ms (no pause after the first failure), then
    // after 1, 2, 4 … 512 ms, then every second; a success would reset the pause
    val run =
      for
        attempts <- IO.ref(Vector.empty[FiniteDuration])
        failing = Resource.eval(
          IO.monotonic.flatMap(t => attempts.update(_ :+ t)) *>
            IO.raiseError[Unit](new java.io.IOException("EMFILE"))
        )
        _ <- WideBacklogSocketGroup.acceptLoop(failing, isOpen = true)(_ => IO.never).compile.drain
          .timeoutTo(4.seconds, IO.unit)
        seen <- attempts.get
      yield seen
    val pauses = Vector(Duration.Zero) ++ Iterator.iterate(1.milli)(_ * 2).takeWhile(_ < 1.second)
    val expected = pauses.scanLeft(Duration.Zero: FiniteDuration)(_ + _) // 0, 0, 1, 3, 7 … 1023 ms
    TestControl.executeEmbed(run).map { seen =>
      assertEquals(seen.take(expected.size), expected)
      assertEquals(seen.drop(expected.size), Vector(2023.millis, 3023.millis))
    }
  }
