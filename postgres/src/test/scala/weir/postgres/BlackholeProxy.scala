package weir.postgres

import cats.effect.{IO, Resource}

import java.io.{InputStream, OutputStream}
import java.net.{InetSocketAddress, ServerSocket, Socket}
import java.util.concurrent.ConcurrentLinkedQueue
import scala.jdk.CollectionConverters.*

/**
 * A TCP proxy on loopback to the test server. [[blackholeOpen]] makes every connection open at that moment
 * go silent for good, in both directions, without closing anything: what a client sees when a network
 * partition, a failover to another host or a NAT that forgot the flow leaves its connection half-open.
 * Connections opened afterwards are forwarded as usual. Closing the proxy closes every socket.
 */
final class BlackholeProxy private (server: ServerSocket, target: InetSocketAddress):

  private final class Link(val client: Socket, val upstream: Socket):
    @volatile var silent = false
    def close(): Unit =
      try client.close()
      finally upstream.close()

  private val links = new ConcurrentLinkedQueue[Link]

  /** The port to connect to instead of the server's. */
  def port: Int = server.getLocalPort

  /** Silences every connection open now; later ones are forwarded. */
  def blackholeOpen(): Unit = links.asScala.foreach(_.silent = true)

  /** `url` (any form [[DatabaseConfig]] takes) through this proxy, as a JDBC URL with its user and password. */
  def url(original: String): String =
    val (jdbc, props) = DatabaseConfig.toJdbc(original)
    val rest = jdbc.replaceFirst("^jdbc:postgresql://[^/]+", "")
    val credentials =
      props.asScala.map((k, v) => s"$k=${java.net.URLEncoder.encode(v, "UTF-8")}").mkString("&")
    val separator = if rest.contains("?") then "&" else "?"
    s"jdbc:postgresql://127.0.0.1:$port$rest${if credentials.isEmpty then "" else separator + credentials}"

  private def start(): Unit =
    daemon("accept") {
      while !server.isClosed do
        try
          val client = server.accept()
          val upstream = new Socket(target.getAddress, target.getPort)
          val link = new Link(client, upstream)
          links.add(link)
          daemon("up")(pump(link, client.getInputStream, upstream.getOutputStream))
          daemon("down")(pump(link, upstream.getInputStream, client.getOutputStream))
        catch case _: java.io.IOException => ()
    }

  private def pump(link: Link, in: InputStream, out: OutputStream): Unit =
    val buffer = new Array[Byte](16384)
    try
      var n = in.read(buffer)
      while n >= 0 do
        // a silenced link swallows what it reads and keeps both sockets open
        if !link.silent then
          out.write(buffer, 0, n)
          out.flush()
        n = in.read(buffer)
      if !link.silent then link.close()
    catch case _: java.io.IOException => if !link.silent then link.close()

  private def daemon(name: String)(body: => Unit): Unit =
    val t = new Thread(() => body, s"blackhole-proxy-$name")
    t.setDaemon(true)
    t.start()

  private def close(): Unit =
    server.close()
    links.asScala.foreach(l =>
      try l.close()
      catch case _: java.io.IOException => ()
    )

object BlackholeProxy:

  /** A proxy to the server `url` names, closed with every connection on release. */
  def to(url: String): Resource[IO, BlackholeProxy] =
    val jdbc = DatabaseConfig.toJdbc(url)._1
    val hostPort = jdbc.stripPrefix("jdbc:postgresql://").takeWhile(_ != '/')
    val (host, port) = hostPort.lastIndexOf(':') match
      case -1 => (hostPort, 5432)
      case i => (hostPort.take(i), hostPort.drop(i + 1).toInt)
    Resource.make(IO.blocking {
      val proxy = new BlackholeProxy(
        new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress),
        new InetSocketAddress(host, port)
      )
      proxy.start()
      proxy
    })(p => IO.blocking(p.close()))
