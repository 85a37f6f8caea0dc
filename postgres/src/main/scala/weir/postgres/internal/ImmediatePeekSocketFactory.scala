package weir.postgres.internal

import java.io.{FilterInputStream, InputStream}
import java.net.{InetAddress, InetSocketAddress, Socket, SocketTimeoutException}
import javax.net.SocketFactory

/**
 * The sockets of a worker's session (pgjdbc's `socketFactory`): a read made with a 1 ms timeout while
 * nothing has arrived times out at once instead of after that millisecond.
 *
 * Why: after every notification it reads, pgjdbc looks for more by reading with a 1 ms socket timeout
 * (`PGStream.hasMessagePending`), and its rule to look at most once a second does not hold when the look
 * times out, so each notification reaches the caller a millisecond late: a large share of an idle
 * worker's latency (docs/lab/durable.md, "Idle latency"). Nothing else in pgjdbc reads with a 1 ms timeout.
 *
 * Timing out sooner changes no state: the same timeout, with the same bytes read, happens when the
 * millisecond passes, and a caller that reads with that timeout must already handle it. Only reads that
 * find nothing to read are cut short, so under TLS (which reads through this socket) a record whose bytes
 * are there is read as before.
 */
final class ImmediatePeekSocketFactory extends SocketFactory:
  override def createSocket(): Socket = new ImmediatePeekSocketFactory.PeekSocket
  def createSocket(host: String, port: Int): Socket = connected(new InetSocketAddress(host, port), None)
  def createSocket(host: String, port: Int, localHost: InetAddress, localPort: Int): Socket =
    connected(new InetSocketAddress(host, port), Some(new InetSocketAddress(localHost, localPort)))
  def createSocket(host: InetAddress, port: Int): Socket = connected(new InetSocketAddress(host, port), None)
  def createSocket(address: InetAddress, port: Int, localAddress: InetAddress, localPort: Int): Socket =
    connected(new InetSocketAddress(address, port), Some(new InetSocketAddress(localAddress, localPort)))

  private def connected(remote: InetSocketAddress, local: Option[InetSocketAddress]): Socket =
    val s = createSocket()
    try
      local.foreach(s.bind)
      s.connect(remote)
      s
    catch
      case e: Throwable =>
        s.close()
        throw e

private[postgres] object ImmediatePeekSocketFactory:

  /** The socket timeout of pgjdbc's look for a pending message. */
  val peekTimeoutMillis: Int = 1

  private final class PeekSocket extends Socket:
    @volatile private var input: InputStream = scala.compiletime.uninitialized

    override def getInputStream: InputStream =
      if input == null then
        synchronized {
          if input == null then input = new PeekInput(super.getInputStream, () => getSoTimeout)
        }
      input

  /** Reads `in`, but a read with the peek's timeout (`timeout()`) finds nothing there times out at once. */
  final class PeekInput(in: InputStream, timeout: () => Int) extends FilterInputStream(in):
    private def nothingThere(): Boolean = timeout() == peekTimeoutMillis && in.available() == 0

    override def read(): Int =
      if nothingThere() then throw new SocketTimeoutException("nothing to read")
      in.read()

    override def read(b: Array[Byte], off: Int, len: Int): Int =
      if len > 0 && nothingThere() then throw new SocketTimeoutException("nothing to read")
      in.read(b, off, len)
