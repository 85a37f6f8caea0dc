package weir

import cats.effect.{Deferred, IO, Ref}
import cats.effect.testkit.TestControl
import cats.effect.unsafe.implicits.global
import cats.syntax.all.*
import fs2.Stream
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/**
 * [[Limit.adaptive]] in pipelines over random settings and random upstreams, in virtual time: the limit
 * stays within `[min, max]`, every attempt in flight has a live worker of its own and workers never exceed
 * `max`, and every task is accounted for. (Whether an attempt started above the limit in force cannot be
 * judged from inside the handler: an attempt its worker took just before the limit was lowered may begin
 * after, for example when a task timeout runs it in a fiber of its own. The pool's workers are what the
 * limit bounds; `DrainSuite` checks exactly when they retire after a lowering.)
 */
class AdaptiveLimitPropertySuite extends ScalaCheckSuite:

  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(40)

  final case class Scenario(
      min: Int,
      max: Int,
      initial: Int,
      aimd: Boolean,
      window: Int, // ms
      minSamples: Int,
      tasks: Int,
      capacity: Int, // the upstream serves this many at once and queues the rest
      base: Int, // ms
      failEvery: Int, // every n-th task fails (0: none)
      timeout: Option[Int] // ms
  )

  private val scenarios: Gen[Scenario] =
    for
      min <- Gen.choose(1, 5)
      max <- Gen.choose(min, min + 40)
      initial <- Gen.choose(min, max)
      aimd <- Gen.oneOf(false, true)
      window <- Gen.choose(1, 50)
      minSamples <- Gen.choose(1, 10)
      tasks <- Gen.choose(50, 600)
      capacity <- Gen.choose(1, 30)
      base <- Gen.choose(1, 20)
      failEvery <- Gen.oneOf(0, 0, 3, 17)
      timeout <- Gen.option(Gen.choose(5, 60))
    yield Scenario(min, max, initial, aimd, window, minSamples, tasks, capacity, base, failEvery, timeout)

  final case class Seen(violations: Vector[String], summary: Summary[Int])

  private def observe(sc: Scenario): Seen =
    val limit = Limit.adaptive(
      initial = sc.initial,
      min = sc.min,
      max = sc.max,
      algorithm = if sc.aimd then AdaptiveAlgorithm.aimd() else AdaptiveAlgorithm.gradient(),
      window = sc.window.millis,
      minSamples = sc.minSamples
    )
    val program =
      for
        handle <- Deferred[IO, Running[IO, Int]]
        // (in flight, violations)
        track <- Ref.of[IO, (Int, Vector[String])]((0, Vector.empty))
        handler = (i: Int) =>
          handle.get.flatMap(_.snapshot).flatMap { snap =>
            track.modify { (n, bad) =>
              val now = n + 1
              val wrong = Vector(
                Option.when(now > sc.max)(s"$now in flight above max ${sc.max}"),
                Option.when(now > snap.workers)(s"$now in flight with ${snap.workers} workers alive"),
                Option.when(snap.workers > sc.max)(s"${snap.workers} workers alive above max ${sc.max}"),
                Option.when(
                  snap.limit < sc.min || snap.limit > sc.max
                )(s"limit ${snap.limit} outside [min, max]")
              ).flatten
              ((now, bad ++ wrong), now)
            }
          }.flatMap { n =>
            val latency = if n <= sc.capacity then sc.base.toLong else sc.base.toLong * n / sc.capacity
            IO.sleep(latency.millis) *>
              IO.raiseError(new RuntimeException(s"task $i")).whenA(sc.failEvery > 0 && i % sc.failEvery == 0)
          }.guarantee(track.update((n, b) => (n - 1, b)))
        pipeline = Pipeline(Stream.range(0, sc.tasks).covary[IO]).process(handler).withLimit(limit)
        summary <- sc.timeout.fold(pipeline)(t => pipeline.withTaskTimeout(t.millis)).start.use { running =>
          handle.complete(running) *> running.join
        }
        seen <- track.get
      yield Seen(seen._2, summary)
    TestControl.executeEmbed(program).unsafeRunSync()

  property("the limit stays in [min, max]; in flight never above the live workers, nor workers above max") {
    Prop.forAllNoShrink(scenarios) { sc =>
      val seen = observe(sc)
      assertEquals(seen.violations, Vector.empty, sc)
      assertEquals(seen.summary.received, sc.tasks.toLong, sc)
      assertEquals(seen.summary.succeeded + seen.summary.failed, sc.tasks.toLong, sc)
    }
  }
