package weir.lab.requests

import cats.effect.{IO, LiftIO, Resource, Selector}
import cats.syntax.all.*
import com.comcast.ip4s.{Host, IpAddress, Port, SocketAddress}
import fs2.Stream
import fs2.io.net.{Network, Socket, SocketGroup, SocketOption}

import java.net.InetSocketAddress
import scala.concurrent.duration.*
import java.nio.channels.{
  AsynchronousServerSocketChannel,
  AsynchronousSocketChannel,
  CompletionHandler,
  SelectionKey,
  ServerSocketChannel,
  SocketChannel
}

/**
 * A socket group whose server sockets listen with a backlog of `backlog` pending connections (the kernel
 * caps it at `net.core.somaxconn`) instead of the JDK's default of 50, which neither fs2 nor Ember lets
 * one change. With 50, thousands of clients connecting at once overflow the accept queue: the kernel drops
 * their handshakes and they retry after 1, 3, 7… seconds (seen here: 46,708 `ListenOverflows` and requests
 * waiting 64 s for a connection). Client sockets come from `clients`.
 *
 * Accepted sockets are, when the runtime has Cats Effect's selector polling system (`Selector.find`; the
 * default and weir's runtime both do), non-blocking `SocketChannel`s polled by the compute threads
 * themselves and wrapped by fs2's `SelectingSocket` — what fs2's own `Network[IO]` does on such a runtime.
 * Otherwise they are NIO2 channels wrapped by fs2's `Socket.forAsync`, whose every read and write
 * completes on the JDK's channel-group thread and hops to a compute thread (ADR 0013); `polled = false`
 * asks for those.
 */
final class WideBacklogSocketGroup(backlog: Int, clients: Network[IO], polled: Boolean = true)
    extends SocketGroup[IO]:
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
    Resource.eval(Selector.find).flatMap {
      case Some(selector) if polled => selecting(selector, address, port, options)
      case _ => asynchronous(address, port, options)
    }

  private def bindAddress(address: Option[Host], port: Option[Port]): IO[InetSocketAddress] =
    address.traverse(_.resolve[IO]).map(ip =>
      new InetSocketAddress(ip.map(_.toInetAddress).orNull, port.fold(0)(_.value))
    )

  private def selecting(
      selector: Selector,
      address: Option[Host],
      port: Option[Port],
      options: List[SocketOption]
  ): Resource[IO, (SocketAddress[IpAddress], Stream[IO, Socket[IO]])] =
    Resource
      .make(IO(selector.provider.openServerSocketChannel()))(ch => IO(ch.close()))
      .evalMap { ch =>
        bindAddress(address, port).flatMap { at =>
          IO {
            ch.configureBlocking(false)
            val _ = ch.bind(at, backlog)
            val local = WideBacklogSocketGroup.addressOf(ch.getLocalAddress)
            (local, acceptedSelecting(selector, ch, local, options))
          }
        }
      }

  private def acceptedSelecting(
      selector: Selector,
      server: ServerSocketChannel,
      local: SocketAddress[IpAddress],
      options: List[SocketOption]
  ): Stream[IO, Socket[IO]] =
    WideBacklogSocketGroup.acceptLoop(acceptOneSelecting(selector, server), server.isOpen) { ch =>
      IO {
        ch.configureBlocking(false)
        options.foreach(o => ch.setOption(o.key, o.value))
        WideBacklogSocketGroup.addressOf(ch.getRemoteAddress)
      }.flatMap(remote => WideBacklogSocketGroup.wrapSelecting(selector, ch, local, remote))
    }

  private def acceptOneSelecting(
      selector: Selector,
      server: ServerSocketChannel
  ): Resource[IO, SocketChannel] =
    Resource.makeFull[IO, SocketChannel] { poll =>
      def go: IO[SocketChannel] =
        IO(server.accept()).flatMap {
          case null => poll(selector.select(server, SelectionKey.OP_ACCEPT)) *> go
          case ch => IO.pure(ch)
        }
      go
    }(ch => IO(if ch.isOpen then ch.close()))

  private def asynchronous(
      address: Option[Host],
      port: Option[Port],
      options: List[SocketOption]
  ): Resource[IO, (SocketAddress[IpAddress], Stream[IO, Socket[IO]])] =
    Resource
      .make(IO(AsynchronousServerSocketChannel.open()))(ch => IO(ch.close()))
      .evalMap { ch =>
        bindAddress(address, port).flatMap { at =>
          IO {
            val _ = ch.bind(at, backlog)
            (WideBacklogSocketGroup.addressOf(ch.getLocalAddress), accepted(ch, options))
          }
        }
      }

  private def accepted(
      server: AsynchronousServerSocketChannel,
      options: List[SocketOption]
  ): Stream[IO, Socket[IO]] =
    WideBacklogSocketGroup.acceptLoop(acceptOne(server), server.isOpen) { ch =>
      IO(options.foreach(o => ch.setOption(o.key, o.value))) *> WideBacklogSocketGroup.wrap(ch)
    }

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
   * Each connection `acceptOne` accepts, wrapped by `wrap`, in a scope of its own (closed when its consumer
   * is done with it). A failed accept is skipped while the server socket `isOpen`, after a pause that
   * doubles with each failure in a row (none after the first, then 1 ms up to 1 s; [[acceptPause]]) and is
   * over at the next success: a lasting error such as running out of file descriptors slows the loop down
   * instead of spinning a compute thread. Once the server socket is closed, the stream ends.
   */
  private[requests] def acceptLoop[C](acceptOne: Resource[IO, C], isOpen: => Boolean)(
      wrap: C => IO[Socket[IO]]
  ): Stream[IO, Socket[IO]] =
    Stream.eval(IO.ref(Duration.Zero: FiniteDuration)).flatMap { pause =>
      def next: Stream[IO, Option[Socket[IO]]] =
        Stream.resource(acceptOne.attempt).flatMap {
          case Right(ch) => Stream.eval(pause.set(Duration.Zero) *> wrap(ch)).map(Some(_))
          case Left(_) if !isOpen => Stream.emit(None)
          case Left(_) => Stream.exec(pause.getAndUpdate(acceptPause).flatMap(IO.sleep))
        } ++ next
      next.unNoneTerminate
    }

  /** The pause after the next failed accept, given the pause after this one. */
  private[requests] def acceptPause(last: FiniteDuration): FiniteDuration =
    if last == Duration.Zero then 1.milli else (last * 2).min(1.second)

  private def addressOf(a: java.net.SocketAddress): SocketAddress[IpAddress] =
    SocketAddress.fromInetSocketAddress(a.asInstanceOf[InetSocketAddress])

  /**
   * fs2's own wrappers of a channel, `Socket.forAsync` (NIO2) and `SelectingSocket.apply` (a non-blocking
   * channel polled by Cats Effect's selector), are `private[net]` in Scala but public in the bytecode: they
   * are called reflectively (once per connection; the suites' servers all go through one of them, so a
   * change in fs2 fails them at once).
   */
  private val forAsync =
    Class.forName("fs2.io.net.SocketCompanionPlatform")
      .getMethod("forAsync", classOf[AsynchronousSocketChannel], classOf[cats.effect.kernel.Async[?]])

  private val selectingSocket = Class.forName("fs2.io.net.SelectingSocket$")
  private val selectingModule = selectingSocket.getField("MODULE$").get(null)
  private val selectingApply =
    selectingSocket.getMethod(
      "apply",
      classOf[Selector],
      classOf[SocketChannel],
      classOf[SocketAddress[?]],
      classOf[SocketAddress[?]],
      classOf[LiftIO[?]],
      classOf[cats.effect.kernel.Async[?]]
    )

  private def wrap(ch: AsynchronousSocketChannel): IO[Socket[IO]] =
    IO(forAsync.invoke(Socket, ch, IO.asyncForIO).asInstanceOf[IO[Socket[IO]]]).flatten

  private def wrapSelecting(
      selector: Selector,
      ch: SocketChannel,
      local: SocketAddress[IpAddress],
      remote: SocketAddress[IpAddress]
  ): IO[Socket[IO]] =
    IO(
      selectingApply.invoke(selectingModule, selector, ch, local, remote, LiftIO.ioLiftIO, IO.asyncForIO)
        .asInstanceOf[IO[Socket[IO]]]
    ).flatten
