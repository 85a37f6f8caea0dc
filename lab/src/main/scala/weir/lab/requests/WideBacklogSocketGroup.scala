package weir.lab.requests

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import com.comcast.ip4s.{Host, IpAddress, Port, SocketAddress}
import fs2.Stream
import fs2.io.net.{Network, Socket, SocketGroup, SocketOption}

import java.net.InetSocketAddress
import java.nio.channels.{AsynchronousServerSocketChannel, AsynchronousSocketChannel, CompletionHandler}

/**
 * A socket group whose server sockets listen with a backlog of `backlog` pending connections (the kernel
 * caps it at `net.core.somaxconn`) instead of the JDK's default of 50, which neither fs2 nor Ember lets
 * one change. With 50, thousands of clients connecting at once overflow the accept queue: the kernel drops
 * their handshakes and they retry after 1, 3, 7… seconds (seen here: 46,708 `ListenOverflows` and requests
 * waiting 64 s for a connection). Accepted sockets are NIO2 channels wrapped by fs2's `Socket.forAsync`;
 * client sockets come from `clients`.
 */
final class WideBacklogSocketGroup(backlog: Int, clients: Network[IO]) extends SocketGroup[IO]:
  require(backlog > 0, s"backlog must be > 0, was: $backlog")

  def client(to: SocketAddress[Host], options: List[SocketOption]): Resource[IO, Socket[IO]] =
    clients.connect(to, options)

  def server(address: Option[Host], port: Option[Port], options: List[SocketOption]): Stream[IO, Socket[IO]] =
    Stream.resource(serverResource(address, port, options)).flatMap(_._2)

  def serverResource(
      address: Option[Host],
      port: Option[Port],
      options: List[SocketOption]
  ): Resource[IO, (SocketAddress[IpAddress], Stream[IO, Socket[IO]])] =
    Resource
      .make(IO(AsynchronousServerSocketChannel.open()))(ch => IO(ch.close()))
      .evalMap { ch =>
        address.traverse(_.resolve[IO]).flatMap { ip =>
          IO {
            ch.bind(new InetSocketAddress(ip.map(_.toInetAddress).orNull, port.fold(0)(_.value)), backlog)
            val local =
              SocketAddress.fromInetSocketAddress(ch.getLocalAddress.asInstanceOf[InetSocketAddress])
            (local, accepted(ch, options))
          }
        }
      }

  /** Each accepted connection in a scope of its own, closed when its consumer is done with it. */
  private def accepted(
      server: AsynchronousServerSocketChannel,
      options: List[SocketOption]
  ): Stream[IO, Socket[IO]] =
    // None: the server socket is closed, the stream ends; a failed accept on an open socket is skipped
    def next: Stream[IO, Option[Socket[IO]]] =
      Stream.resource(acceptOne(server).attempt).flatMap {
        case Right(ch) =>
          Stream.eval(IO(options.foreach(o => ch.setOption(o.key, o.value))) *>
            WideBacklogSocketGroup.wrap(ch))
            .map(Some(_))
        case Left(_) if !server.isOpen => Stream.emit(None)
        case Left(_) => Stream.empty
      } ++ next
    next.unNoneTerminate

  private def acceptOne(server: AsynchronousServerSocketChannel): Resource[IO, AsynchronousSocketChannel] =
    Resource.makeFull[IO, AsynchronousSocketChannel] { poll =>
      poll(IO.async[AsynchronousSocketChannel] { cb =>
        IO {
          server.accept(
            null,
            new CompletionHandler[AsynchronousSocketChannel, Null]:
              def completed(ch: AsynchronousSocketChannel, a: Null): Unit = cb(Right(ch))
              def failed(e: Throwable, a: Null): Unit = cb(Left(e))
          )
          // an accept cannot be withdrawn: closing the server socket is the only way to stop it
          Some(IO(server.close()))
        }
      })
    }(ch => IO(if ch.isOpen then ch.close()))

object WideBacklogSocketGroup:

  /**
   * fs2's own wrapper of an NIO2 channel, `Socket.forAsync`, is `private[net]` in Scala but public in the
   * bytecode: it is called reflectively (once per connection; the suites' servers all go through it, so a
   * change in fs2 fails them at once).
   */
  private val forAsync =
    Class.forName("fs2.io.net.SocketCompanionPlatform")
      .getMethod("forAsync", classOf[AsynchronousSocketChannel], classOf[cats.effect.kernel.Async[?]])

  private def wrap(ch: AsynchronousSocketChannel): IO[Socket[IO]] =
    IO(forAsync.invoke(Socket, ch, IO.asyncForIO).asInstanceOf[IO[Socket[IO]]]).flatten
