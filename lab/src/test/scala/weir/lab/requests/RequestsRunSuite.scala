package weir.lab.requests

import cats.effect.unsafe.IORuntime
import cats.effect.{IO, Resource}
import cats.syntax.all.*
import io.circe.parser.parse
import munit.CatsEffectSuite
import weir.runtime.WeirRuntime

import java.nio.file.Files
import scala.concurrent.duration.*

/**
 * CI-sized runs on loopback against a real delay server: every request succeeds, the client's and the
 * server's counts agree, and in flight never exceeds the limit by the server's own peak.
 */
class RequestsRunSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 120.seconds
  override implicit lazy val munitIORuntime: IORuntime = WeirRuntime.unsafeCreate()._1

  private def settings(n: Long, concurrency: Int, approaches: String*) =
    Requests.Settings(
      n = n,
      concurrency = concurrency,
      maxDelayMs = 40,
      seed = 11,
      approaches = approaches.toVector.flatMap(RequestApproach.byName),
      server = ServerPlacement.Same,
      timeLimit = Some(80.seconds),
      upFrontHeapMiB = 128,
      progress = false
    )

  private def checkAll(results: Vector[RequestResult], n: Long, concurrency: Int): Unit =
    results.foreach { r =>
      val clue = s"${r.approach}: $r".take(600)
      assertEquals(r.status, "ok", clue)
      assertEquals((r.succeeded, r.failed), (n, 0L), clue)
      assertEquals(r.serverServed, n, clue)
      assert(r.serverPeakInFlight <= concurrency, clue)
      assert(r.clientPeakInFlight <= concurrency, clue)
      assert(r.serverPeakInFlight > 0, clue)
      assert(r.ratio >= 1.0, clue) // nothing beats the ideal
      assert(r.overheadMeanMs >= 0.0 && r.overheadP99Ms >= r.overheadP50Ms, clue)
      assertEquals(r.samples.last.completed, n, clue)
    }

  test("weir, weir adaptive and the recursive answer: every request once, within the limit") {
    val n = 2000L
    val c = 200
    Requests.run(settings(n, c, "weir", "weir-adaptive", "recursive")).map { results =>
      assertEquals(results.map(_.approach), Vector("weir", "weir-adaptive", "recursive"))
      checkAll(results, n, c)
      val weir = results.head
      // weir keeps the limit full: it reaches it once, early in the run
      assert(weir.fillMs >= 0.0 && weir.fillMs < weir.makespanMs, weir.toString.take(600))
    }
  }

  test("Cats Effect's worker fibers alone: every request once, the limit reached and never passed") {
    Requests.run(settings(1000, 100, "ce-workers")).map { results =>
      checkAll(results, 1000, 100)
      assertEquals(results.head.clientPeakInFlight, 100L)
    }
  }

  test("weir with the JDK's client: every request once, within the limit") {
    Requests.run(settings(1000, 50, "weir").copy(client = ClientKind.Jdk)).map(checkAll(_, 1000, 50))
  }

  test("weir with Ember's client: its pool does not cap the concurrency below the limit") {
    Requests.run(settings(500, 100, "weir").copy(client = ClientKind.Ember)).map(checkAll(_, 500, 100))
  }

  test("warm-up: --warmup-runs runs of --warmup requests, unmeasured, before the measured run") {
    val config = DelayServer.Config(maxDelayMs = 40, seed = 11)
    val json = IO(Files.createTempFile("weir-requests", ".json"))
    (DelayServer.resource(config), Resource.make(json)(f => IO(Files.deleteIfExists(f)).void)).tupled.use {
      (server, file) =>
        val s = settings(400, 100, "weir").copy(
          url = Some(server.baseUrl),
          warmup = 150,
          warmupRuns = 3,
          json = Some(file)
        )
        for
          results <- Requests.run(s)
          stats <- server.stats
          written <- IO(Files.readString(file))
        yield
          checkAll(results, 400, 100) // the measured run's counts only
          assertEquals(stats.served, 3 * 150L + 400L)
          val env = parse(written).toOption.get.hcursor.downField("environment")
          assertEquals(env.get[Long]("warmup_requests"), Right(150L))
          assertEquals(env.get[Int]("warmup_runs"), Right(3))
          // the one-line summary each warm-up run prints; a long first error is cut at 200 characters
          val r = results.head
          assert(r.brief.startsWith("ok, ") && r.brief.contains("400 ok, 0 failed, in flight"), r.brief)
          val long = r.copy(detail = Some("e" * 500)).brief
          assert(long.endsWith(" (" + "e" * 200 + "…)"), long)
    }
  }

  test("parallel: in flight never exceeds the cores") {
    Requests.run(settings(40, 100, "parallel")).map { results =>
      checkAll(results, 40, 100)
      assert(results.head.serverPeakInFlight <= Runtime.getRuntime.availableProcessors, results.head)
      assert(results.head.fillMs.isNaN, results.head) // never 100 in flight
    }
  }

  test("up-front runs in a child JVM and reports its heap") {
    Requests.run(settings(500, 100, "up-front")).map { results =>
      checkAll(results, 500, 100)
      assertEquals(results.head.heapCapMiB, 128L)
      assert(results.head.peakHeapMiB > 0, results.head)
    }
  }

  test("up-front out of heap in its child JVM is reported, not fatal") {
    // two million boxed ids and fibers cannot fit in 16 MiB: the child dies at once
    Requests.run(settings(2_000_000, 100, "up-front").copy(upFrontHeapMiB = 16)).map { results =>
      assertEquals(results.head.status, "out of memory", results.head.toString.take(400))
      assert(results.head.detail.exists(_.contains("-Xmx16m")), results.head.detail)
    }
  }
