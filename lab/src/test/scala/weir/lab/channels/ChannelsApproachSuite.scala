package weir.lab.channels

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/**
 * The channel experiment's effect-based approaches in virtual time, where the makespan is exact: each
 * must reach its ideal (longest task unbounded, list schedule at k), run every task once and never more
 * than its limit at once. The throttled shapes end exactly when their ideals say.
 */
class ChannelsApproachSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds

  /** Makespan (ns), tasks done exactly once, peak in flight: in virtual time. */
  private def virtual(a: Approach, delays: Vector[FiniteDuration]): IO[(Long, Int, Int)] =
    TestControl.executeEmbed(
      Work(delays).flatMap(work =>
        IO.monotonic.flatMap(t0 =>
          a.run(work) *>
            IO.monotonic.map(t1 => ((t1 - t0).toNanos, work.tally.completed, work.tally.peakInFlight))
        )
      )
    )

  private val effectOnly = Approach.all(cores = 2).filter(_.effectOnly)

  test("the line-up: every approach of the write-up and weir, only the blocking loop needs real threads") {
    assertEquals(
      Approach.all(2).map(_.name),
      Vector(
        "channel",
        "parallel-for@4",
        "async-loop@4",
        "async-loop@40",
        "async-loop@default(2)",
        "weir-unbounded",
        "weir@4",
        "weir@40"
      )
    )
    assertEquals(Approach.all(2).filterNot(_.effectOnly).map(_.name), Vector("parallel-for@4"))
  }

  // hand-made: 6 tasks; unbounded the makespan is the 50 ms task; at 4: 30,10,50,20 start at 0, 40 at 10
  // (ends 50), 5 at 20 (ends 25): 50; at 2: 30 | 10, 50 at 10 (60) | 20 at 30 (50), 40 at 50 (90), 5 at 60 (65): 90
  private val handMade = Vector(30L, 10L, 50L, 20L, 40L, 5L).map(_.millis)

  test("hand-made delays: the ideals are 50 ms unbounded, 50 ms at 4, 90 ms at 2") {
    val ns = handMade.map(_.toNanos)
    assertEquals(Ideal.of(ns, None), 50.millis.toNanos)
    assertEquals(Ideal.of(ns, Some(4)), 50.millis.toNanos)
    assertEquals(Ideal.of(ns, Some(2)), 90.millis.toNanos)
  }

  (effectOnly :+ Approach.AsyncLoop(2, "2") :+ Approach.Weir(Some(2))).foreach { a =>
    test(s"${a.name}: hand-made delays end exactly at the ideal, every task once, within its limit") {
      virtual(a, handMade).map { (makespan, done, peak) =>
        assertEquals(makespan, Ideal.of(handMade.map(_.toNanos), a.limit))
        assertEquals(done, handMade.size)
        assert(peak <= a.limit.getOrElse(handMade.size), s"$peak in flight above ${a.limit}")
      }
    }
  }

  test(
    "seed 001's workload (100 tasks, 10–50 ms, three seeds): every effect-based approach ends at its ideal"
  ) {
    (0L to 2L).toList.traverse_ { seed =>
      val delays = Channels.Settings(seed = seed).delaysMs.map(_.millis)
      effectOnly.traverse_ { a =>
        virtual(a, delays).map { (makespan, done, peak) =>
          assertEquals(makespan, Ideal.of(delays.map(_.toNanos), a.limit), s"${a.name}, seed $seed")
          assertEquals(done, 100, s"${a.name}, seed $seed")
          assert(peak <= a.limit.getOrElse(100), s"${a.name}: $peak in flight")
        }
      }
    }
  }

  test("seed 001's delays are uniform on [10, 50) ms, drawn again exactly from the seed") {
    val s = Channels.Settings(seed = 7)
    assertEquals(s.delaysMs, s.delaysMs)
    assertEquals(s.delaysMs.size, 100)
    assert(s.delaysMs.forall(d => d >= 10 && d < 50), s.delaysMs)
    assertNotEquals(Channels.Settings(seed = 8).delaysMs, s.delaysMs)
  }

  private val limits = Throttled.Limits(rate = 200, per = 1.second, burst = 10, service = 10.millis)

  test(
    "two stages: the first stage ends with its longest task; the second at the token bucket's pace, exactly"
  ) {
    val delays = Channels.Settings(seed = 3).delaysMs.map(_.millis)
    TestControl.executeEmbed(Throttled.run(Throttled.Shape.TwoStages, delays, limits)).map { r =>
      val (firstIdeal, allIdeal) = Throttled.ideal(Throttled.Shape.TwoStages, delays.map(_.toNanos), limits)
      assertEquals(r.first.tally.finishedAt.max, firstIdeal)
      assertEquals(firstIdeal, delays.max.toNanos)
      assertEquals(r.second.tally.finishedAt.max, allIdeal)
      // the bucket is full until the first request (the shortest delay); from then on requests come faster
      // than 200/s, so the last of 100 permits is due 90 intervals of 5 ms later, and its call takes 10 ms
      assertEquals(allIdeal, (delays.min + (90 * 5 + 10).millis).toNanos)
      assertEquals((r.first.tally.completed, r.second.tally.completed), (100, 100))
    }
  }

  test("one stage: the first parts wait for permits too, and end no sooner than the bucket allows") {
    // equal delays, so the order in which tasks take permits does not change the ideal
    val delays = Vector.fill(40)(20.millis)
    TestControl.executeEmbed(Throttled.run(Throttled.Shape.OneStage, delays, limits)).map { r =>
      val (firstIdeal, allIdeal) = Throttled.ideal(Throttled.Shape.OneStage, delays.map(_.toNanos), limits)
      // the 40th permit is due at (40 - 10) × 5 ms = 150 ms; its first part ends 20 ms later
      assertEquals(firstIdeal, 170.millis.toNanos)
      assertEquals(allIdeal, 180.millis.toNanos)
      assertEquals(r.first.tally.finishedAt.max, firstIdeal)
      assertEquals(r.second.tally.finishedAt.max, allIdeal)
      assertEquals((r.first.tally.completed, r.second.tally.completed), (40, 40))
    }
  }
