package weir.lab.channels

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}
import weir.RateLimiter

import scala.concurrent.duration.*

/** The channel experiment's ideals on hand-made cases, and the token-bucket ideal against weir's limiter. */
class ChannelsIdealSuite extends CatsEffectSuite with ScalaCheckSuite:

  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(30)

  private val durations = Vector(30L, 10L, 50L, 20L)

  test("unbounded: the longest task") {
    assertEquals(Ideal.unbounded(durations), 50L)
    assertEquals(Ideal.unbounded(Vector.empty), 0L)
    assertEquals(Ideal.of(durations, None), 50L)
  }

  test("bounded at k: the first-come list schedule") {
    // k = 2: 30 and 10 start at 0; 50 takes the slot freed at 10 (ends 60); 20 the one freed at 30 (ends 50)
    assertEquals(Ideal.bounded(durations, 2), 60L)
    // k = 3: 30, 10, 50 at 0; 20 at 10, ends 30; the 50 ends last
    assertEquals(Ideal.bounded(durations, 3), 50L)
    // k = 1: one after the other
    assertEquals(Ideal.bounded(durations, 1), 110L)
    // k >= n: as unbounded
    assertEquals(Ideal.bounded(durations, 40), 50L)
    // the list schedule is greedy in input order, not the optimum: 10, 10, 20 on 2 slots takes 30, not 20
    assertEquals(Ideal.bounded(Vector(10L, 10L, 20L), 2), 30L)
    assertEquals(Ideal.of(durations, Some(2)), 60L)
  }

  test("bad arguments are refused with the value") {
    val _ =
      interceptMessage[IllegalArgumentException]("requirement failed: k must be > 0, was: 0")(Ideal.bounded(
        durations,
        0
      ))
    val _ = interceptMessage[IllegalArgumentException]("requirement failed: durations must be >= 0, was: -1")(
      Ideal.unbounded(Vector(1L, -1L))
    )
    val _ = interceptMessage[IllegalArgumentException]("requirement failed: burst must be >= 1, was: 0")(
      Ideal.tokenBucketGrants(Vector(0L), 1, 1, 0)
    )
    val _ = interceptMessage[IllegalArgumentException](
      "requirement failed: requests must be in order, was: 5 then 4"
    )(
      Ideal.tokenBucketGrants(Vector(5L, 4L), 1, 1, 1)
    )
  }

  test("token bucket: a full bucket of `burst`, then one permit per interval") {
    // 1 permit per 10, burst 2, five requests at 0
    assertEquals(Ideal.tokenBucketGrants(Vector.fill(5)(0L), 1, 10, 2), Vector(0L, 0L, 10L, 20L, 30L))
    // the bucket refills while nobody asks, but never above burst: at 100 it holds 2 again, then waits 10
    assertEquals(
      Ideal.tokenBucketGrants(Vector(0L, 0L, 100L, 100L, 100L), 1, 10, 2),
      Vector(0L, 0L, 100L, 100L, 110L)
    )
    // a fractional interval (3 permits per 10) is rounded up to whole units, without drift: 10/3, 20/3, 30/3
    assertEquals(Ideal.tokenBucketGrants(Vector.fill(4)(0L), 3, 10, 1), Vector(0L, 4L, 7L, 10L))
    // requests later than their permits are granted on arrival
    assertEquals(Ideal.tokenBucketGrants(Vector(0L, 5L, 50L), 1, 10, 1), Vector(0L, 10L, 50L))
  }

  property("token bucket ideal: exactly the grant times of weir's RateLimiter.tokenBucket, in virtual time") {
    val gen =
      for
        n <- Gen.choose(1, 25)
        gaps <- Gen.listOfN(n, Gen.frequency(3 -> Gen.const(0L), 2 -> Gen.choose(1L, 30L)))
        permits <- Gen.choose(1L, 4L)
        per <- Gen.oneOf(5L, 10L, 12L)
        burst <- Gen.choose(1, 4)
      yield (gaps.scanLeft(0L)(_ + _).tail.toVector, permits, per, burst)
    Prop.forAll(gen) { (requests, permits, per, burst) =>
      val program = RateLimiter.tokenBucket[IO](permits, per.millis, burst).flatMap { limiter =>
        // every request waits until its time, then asks; requests due at the same instant ask in any order,
        // which changes who gets which permit but not the grant times (compared sorted)
        requests.parTraverse(at => IO.sleep(at.millis) *> limiter.acquire *> IO.monotonic.map(_.toNanos))
      }
      val granted = TestControl.executeEmbed(program).unsafeRunSync()(using munitIORuntime)
      assertEquals(
        granted.sorted,
        Ideal.tokenBucketGrants(requests.map(_.millis.toNanos), permits, per.millis.toNanos, burst)
      )
    }
  }
