package weir.lab.durable

import cats.effect.IO
import io.circe.parser.parse
import munit.CatsEffectSuite

import java.nio.file.Files
import scala.concurrent.duration.*

/**
 * The durable lab's control phase (`--only control --quick`), in a suite of its own so that the build's two
 * test JVMs can run it beside [[DurableLabSuite]]'s runs: each is among the lab's longest.
 */
class DurableControlLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 5.minutes

  test(
    "--only control --quick: no claim of a paused queue, never more running than the queue's limit, each tick once, no revoked claim started"
  ) {
    val run = IO.blocking(Files.createTempFile("durable-control", ".json")).flatMap { file =>
      DurableLab.execute(DurableLab.Settings(
        url = None,
        quick = true,
        only = Some(Set(DurableLab.Phase.Control))
      ))
        .flatMap(r =>
          IO.blocking(Files.writeString(file, DurableReport.json(DurableLab.Settings(), r).noSpaces)) *>
            IO.blocking(Files.readString(file)).map(text => (r, text))
        )
        .guarantee(IO.blocking(Files.deleteIfExists(file)).void)
    }
    run.map { (r, text) =>
      val c = r.control.getOrElse(fail("no control phase"))
      assertEquals(c.claimsAfterQuiet, 0L)
      assert(c.maxRunningSeen <= c.globalLimit.toLong && c.maxRunningSeen > 0, c.toString)
      assert(c.limitSamples > 0, c.toString)
      // a measure, not a target here: the rate's 5% is the lab page's, on a quiet machine
      assert(c.rateSeen > 0, c.toString)
      assert(c.scheduleTicks >= 100L, c.toString)
      assertEquals((c.scheduleDuplicates, c.scheduleGaps), (0L, 0L))
      // none of the 39 waiting claims revoked from the held-up worker starts there; each is refused, and one
      // the rescue put back may be claimed by that worker again, while its heartbeat is still held up, and
      // refused again: the refusals are at least the claims revoked, not exactly them
      assertEquals(c.revokedStarted, 0L)
      assert(c.revokedRefused >= 39L, c.toString)
      assertEquals((c.cancelToInterruptMillis.size, c.cancelledSeen), (30, 30L))
      val json = parse(text).fold(
        e => fail(s"not JSON: $e"),
        identity
      ).hcursor.downField("records").downField("control")
      assertEquals(json.get[Long]("max_running_seen"), Right(c.maxRunningSeen), text)
      assertEquals(json.get[Long]("revoked_started"), Right(0L), text)
      assertEquals(json.get[Long]("schedule_duplicates"), Right(0L), text)
      assert(json.get[Double]("pause_to_last_claim_ms").isRight, text)
      assert(json.get[Double]("rate_seen_per_s").isRight, text)
      assertEquals(json.get[Double]("cancel_to_interrupt_p50_ms"), Right(c.cancelQuantile(0.5)), text)
      assert(c.cancelQuantile(0.5) <= c.cancelQuantile(0.99), c.toString)
    }
  }
