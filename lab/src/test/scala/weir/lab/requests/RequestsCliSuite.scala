package weir.lab.requests

import munit.FunSuite

import scala.concurrent.duration.*

/** `./weir lab requests` and `./weir lab serve` options: defaults, and bad values refused by name. */
class RequestsCliSuite extends FunSuite:

  test("defaults are the issue's run") {
    val s = Requests.parse(Nil).get
    assertEquals((s.n, s.concurrency, s.maxDelayMs, s.url), (100_000L, 5000, 3000L, None))
    assertEquals(
      s.approaches.map(_.name),
      Vector("parallel", "up-front", "recursive", "ce-workers", "weir", "weir-adaptive")
    )
    assertEquals((s.client, s.server), (ClientKind.Jetty, ServerPlacement.Child))
    assertEquals((s.warmup, s.warmupRuns), (0L, 3))
  }

  test("options are parsed") {
    val s = Requests.parse(List(
      "--tasks",
      "2000",
      "--limit",
      "300",
      "--max-delay",
      "50ms",
      "--seed",
      "9",
      "--approaches",
      "weir,recursive",
      "--client",
      "ember",
      "--server",
      "same",
      "--time-limit",
      "20s",
      "--up-front-heap",
      "64",
      "--server-url",
      "http://127.0.0.1:8000/",
      "--warmup-tasks",
      "700",
      "--warmup-runs",
      "2",
      "--no-progress"
    )).get
    assertEquals((s.warmup, s.warmupRuns), (700L, 2))
    assertEquals((s.n, s.concurrency, s.maxDelayMs, s.seed), (2000L, 300, 50L, 9L))
    assertEquals(s.approaches.map(_.name), Vector("weir", "recursive"))
    assertEquals(
      (s.client, s.server, s.upFrontHeapMiB, s.progress),
      (ClientKind.Ember, ServerPlacement.Same, 64, false)
    )
    assertEquals(s.url, Some("http://127.0.0.1:8000"))
    assertEquals(s.limitFor(1000).toSeconds, 20L)
    assertEquals(Requests.parse(Nil).get.limitFor(10_000).toSeconds, 60L)
  }

  private def refused(args: String*)(expected: String): Unit =
    val (parsed, errors) = Requests.errors(args.toList)
    assertEquals(parsed, None)
    assert(errors.exists(_.contains(expected)), s"expected '$expected' in: $errors")

  test("bad values are refused with the value") {
    refused("--tasks", "0")("--tasks must be > 0, was: 0")
    refused("--tasks", "-5")("--tasks must be > 0, was: -5")
    refused("--limit", "0")("--limit must be > 0, was: 0")
    refused("--max-delay", "0s")("--max-delay must be > 0s, was: 0s")
    refused("--max-delay", "50")("Option --max-delay failed when given '50'")
    refused("--max-delay", "1.5ms")("--max-delay must be a whole number of milliseconds, was: 1.5ms")
    refused("--warmup-tasks", "-1")("--warmup-tasks must be >= 0, was: -1")
    refused("--warmup-runs", "0")("--warmup-runs must be > 0, was: 0")
    refused("--time-limit", "0s")("--time-limit must be > 0s, was: 0s")
    refused("--time-limit", "20")("Option --time-limit failed when given '20'")
    refused("--up-front-heap", "8")("--up-front-heap must be >= 16 MiB, was: 8")
    refused("--client", "curl")("--client must be ember, jdk, jetty, was: curl")
    refused("--server", "remote")("--server must be child or same, was: remote")
    refused("--approaches", "weir,fast")("--approaches: unknown approach 'fast'")
    refused(
      "--server-url",
      "localhost:8000"
    )("--server-url must look like http://HOST:PORT, was: localhost:8000")
    refused(
      "--server-url",
      "https://127.0.0.1:8000"
    )("--server-url must look like http://HOST:PORT, was: https://127.0.0.1:8000")
    refused("--tasks", "many")("--tasks expects a number but was given 'many'")
    refused("--frobnicate")("Unknown option --frobnicate")
    refused("--child-result", "x.json")("--child-result needs --server-url and exactly one of --approaches")
  }

  test("serve's bad values are refused with the value") {
    def serveRefused(args: String*)(expected: String): Unit =
      val (parsed, errors) = Serve.errors(args.toList)
      assertEquals(parsed, None)
      assert(errors.exists(_.contains(expected)), s"expected '$expected' in: $errors")
    serveRefused("--port", "70000")("--port must be in [0, 65535], was: 70000")
    serveRefused("--max-delay", "0s")("--max-delay must be > 0s, was: 0s")
    serveRefused("--max-connections", "0")("--max-connections must be > 0, was: 0")
    serveRefused("--bind", "not a host")("--bind must be an address, was: not a host")
    serveRefused("--idle-timeout", "-1s")("Option --idle-timeout failed when given '-1s'")
    serveRefused("--header-timeout", "5")("Option --header-timeout failed when given '5'")
    serveRefused("--idle-timeout", "soon")("Option --idle-timeout failed when given 'soon'")
    val timeouts = Serve.parse(List("--idle-timeout", "0s", "--header-timeout", "7s")).map(Serve.config)
    assertEquals(timeouts.map(c => (c.idleTimeout, c.headerTimeout)), Some((Duration.Inf, 7.seconds)))
    assertEquals(
      Serve.parse(Nil).map(Serve.config).map(c => (c.idleTimeout, c.headerTimeout)),
      Some((60.seconds, 10.seconds))
    )
    assertEquals(Serve.parse(List("--port", "0", "--seed", "3")).map(o => (o.port, o.seed)), Some((0, 3L)))
  }
