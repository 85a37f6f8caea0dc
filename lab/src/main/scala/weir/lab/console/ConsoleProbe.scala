package weir.lab.console

import cats.effect.{IO, Resource}

import java.net.URI
import java.net.http.{HttpClient, HttpRequest, HttpResponse}
import java.net.URLEncoder
import java.nio.charset.StandardCharsets.UTF_8

/**
 * A client of the console, as a browser is: it logs in with the admin token, keeps the session cookie,
 * reads the CSRF token from a page, and times each request from sending it to the last byte of the
 * response. Redirects are not followed: an action's answer is its redirect.
 */
final class ConsoleProbe private (base: String, client: HttpClient, cookie: String, csrf: String):

  /** GETs `path` (relative to the console's root): the status and the time taken, in milliseconds. */
  def get(path: String): IO[(Int, Double)] =
    val request = HttpRequest.newBuilder(URI.create(base + path))
    send((if cookie.isEmpty then request else request.header("Cookie", cookie)).GET().build())

  /** POSTs the form `fields` (and the CSRF token) to `path`: the status and the time taken. */
  def post(path: String, fields: Seq[(String, String)]): IO[(Int, Double)] =
    send(
      HttpRequest.newBuilder(URI.create(base + path))
        .header("Cookie", cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString(ConsoleProbe.form(fields :+ ("csrf" -> csrf))))
        .build()
    )

  private def send(request: HttpRequest): IO[(Int, Double)] = IO.blocking {
    val start = System.nanoTime()
    val response = client.send(request, HttpResponse.BodyHandlers.ofByteArray())
    (response.statusCode, (System.nanoTime() - start) / 1e6)
  }

object ConsoleProbe:

  def form(fields: Seq[(String, String)]): String =
    fields.map((k, v) => s"${URLEncoder.encode(k, UTF_8)}=${URLEncoder.encode(v, UTF_8)}").mkString("&")

  /** A client of the read-only console at `base` (ending in `/`), which only reads. */
  def reader(base: String): Resource[IO, ConsoleProbe] = client.map(new ConsoleProbe(base, _, "", ""))

  /** Logs in to the console at `base` (ending in `/`) with `token`. */
  def login(base: String, token: String): Resource[IO, ConsoleProbe] = client.evalMap(client =>
    IO.blocking {
      val login = client.send(
        HttpRequest.newBuilder(URI.create(base + "login"))
          .header("Content-Type", "application/x-www-form-urlencoded")
          .POST(HttpRequest.BodyPublishers.ofString(form(Seq("token" -> token))))
          .build(),
        HttpResponse.BodyHandlers.ofString()
      )
      val cookie = login.headers.firstValue("Set-Cookie").orElseThrow(() =>
        new IllegalStateException(s"the console refused the lab's login: status ${login.statusCode}")
      ).takeWhile(_ != ';')
      val page = client.send(
        HttpRequest.newBuilder(URI.create(base)).header("Cookie", cookie).GET().build(),
        HttpResponse.BodyHandlers.ofString()
      ).body
      val csrf = """name="csrf" value="([^"]+)"""".r.findFirstMatchIn(page).map(_.group(1)).getOrElse(
        throw new IllegalStateException("the console's overview holds no CSRF token after the lab's login")
      )
      new ConsoleProbe(base, client, cookie, csrf)
    }
  )

  /**
   * A client closed on release, with its connections: the console's server is released after it, and Ember's
   * shutdown waits for the connections still open (30 s by default), which a client keeps alive when idle.
   */
  private def client: Resource[IO, HttpClient] =
    Resource.fromAutoCloseable(IO(HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build()))
