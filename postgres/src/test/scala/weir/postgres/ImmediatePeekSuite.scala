package weir.postgres

import munit.FunSuite
import weir.postgres.internal.ImmediatePeekSocketFactory
import weir.postgres.internal.ImmediatePeekSocketFactory.PeekInput

import java.io.{ByteArrayInputStream, InputStream}
import java.net.{ServerSocket, SocketTimeoutException}

/** The session's sockets: only a read with the peek's timeout that finds nothing is cut short. */
class ImmediatePeekSuite extends FunSuite:

  /** An input with `ready` bytes there, counting the reads that reach it. */
  private final class Recording(ready: Array[Byte]) extends InputStream:
    var reads = 0
    private val bytes = new ByteArrayInputStream(ready)
    override def available(): Int = bytes.available()
    override def read(): Int =
      reads += 1
      bytes.read()
    override def read(b: Array[Byte], off: Int, len: Int): Int =
      reads += 1
      bytes.read(b, off, len)

  test("a read with the peek's timeout and nothing there times out without reading") {
    val in = new Recording(Array.emptyByteArray)
    val peek = new PeekInput(in, () => ImmediatePeekSocketFactory.peekTimeoutMillis)
    intercept[SocketTimeoutException](peek.read()): Unit
    intercept[SocketTimeoutException](peek.read(new Array[Byte](8), 0, 8)): Unit
    assertEquals(in.reads, 0)
    // a read of nothing is not a peek: it goes through, as it would without the factory
    assertEquals(peek.read(new Array[Byte](0), 0, 0), -1)
    assertEquals(in.reads, 1)
  }

  test("a read with the peek's timeout reads what is there") {
    val in = new Recording(Array[Byte](1, 2, 3))
    val peek = new PeekInput(in, () => ImmediatePeekSocketFactory.peekTimeoutMillis)
    val buffer = new Array[Byte](8)
    assertEquals(peek.read(buffer, 0, 8), 3)
    assertEquals(buffer.take(3).toVector, Vector[Byte](1, 2, 3))
    assertEquals(in.reads, 1)
  }

  test("a read with any other timeout, or none, reaches the socket even when nothing is there yet") {
    for timeout <- List(0, 2, 250, 30000) do
      val in = new Recording(Array.emptyByteArray)
      val peek = new PeekInput(in, () => timeout)
      assertEquals(peek.read(new Array[Byte](8), 0, 8), -1, s"timeout $timeout")
      assertEquals(peek.read(), -1, s"timeout $timeout")
      assertEquals(in.reads, 2, s"timeout $timeout")
  }

  test("a socket of the factory: the peek times out while nothing was sent, then reads what arrives") {
    val server = new ServerSocket(0)
    try
      val socket = new ImmediatePeekSocketFactory().createSocket("127.0.0.1", server.getLocalPort)
      val peer = server.accept()
      try
        socket.setSoTimeout(ImmediatePeekSocketFactory.peekTimeoutMillis)
        val in = socket.getInputStream
        intercept[SocketTimeoutException](in.read()): Unit
        peer.getOutputStream.write(Array[Byte](7, 8))
        peer.getOutputStream.flush()
        // the bytes are there once the kernel has them; until then the peek keeps timing out
        var got = -2
        while got == -2 do
          try got = in.read()
          catch case _: SocketTimeoutException => Thread.onSpinWait()
        assertEquals(got, 7)
        socket.setSoTimeout(0)
        assertEquals(in.read(), 8)
      finally
        peer.close()
        socket.close()
    finally server.close()
  }
