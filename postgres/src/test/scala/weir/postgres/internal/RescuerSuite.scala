package weir.postgres.internal

import cats.effect.IO
import weir.postgres.{DbSuite, Rows, TestWorkers}
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * The rescuer ([[Rescuer]]): which of its rounds look at the leases, and, against a real server, that a
 * running rescuer frees a claim whose lease expired while its worker is alive, at a later round's look.
 */
class RescuerSuite extends DbSuite:

  test("the leases are looked at in the first round, then every lease / heartbeat rounds") {
    val defaults = weir.postgres.WorkerConfig("q")
    assertEquals(Rescuer.roundsPerLeaseLook(defaults), 60L) // a minute's lease, rounds of 250 ms: every 15 s
    assertEquals(Rescuer.roundsPerLeaseLook(defaults.copy(heartbeat = 100.millis, lease = 1.second)), 10L)
    assertEquals(Rescuer.roundsPerLeaseLook(defaults.copy(heartbeat = 1.second, lease = 1500.millis)), 1L)
    assertEquals((0L until 130L).filter(Rescuer.looksAtLeases(_, 60L)), Vector(0L, 60L, 120L))
    assertEquals((0L until 3L).filter(Rescuer.looksAtLeases(_, 1L)), Vector(0L, 1L, 2L))
  }

  // rounds every 25 ms, a look at the leases every 10 rounds; the owner kept alive far within deadAfter
  private val config =
    TestWorkers.config("lease").copy(heartbeat = 100.millis, lease = 1.second, deadAfter = 10.seconds)

  withDb("a claim whose lease expires while its worker beats is freed at a later look, as 'lease expired'") {
    db =>
      HeldClaims.of(db, 1, config).use { held =>
        val owner = held.worker.owner
        val tasks = db.schema("tasks")
        val alive = Rows.exec(s"UPDATE ${db.schema("workers")} SET heartbeat_at = now() WHERE id = $owner")
        // the lease ends 400 ms after it is set, after the rescuer's first round, which looks at the leases
        // and finds none expired; the owner's heartbeat stays fresh, so only a later look can free it
        val keepAlive = (alive *> IO.sleep(50.millis)).foreverM
        for
          _ <- Rows.exec(s"UPDATE $tasks SET lease_expires_at = now() + interval '400 milliseconds'")
          freed <- db.workerPool(size = 1).use(run =>
            keepAlive.background.surround(
              Rescuer.resource(run, held.worker, HeldClaims.silent(held.worker)).surround(
                Eventually.until(
                  "the claim freed",
                  Rows.query[(String, String)](s"SELECT state::text, errors::text FROM $tasks"),
                  within = 20.seconds,
                  every = 20.millis
                )(_.exists(_._1 == "available"))
              )
            )
          )
        yield
          assertEquals(freed.map(_._1), Vector("available"))
          assert(freed.head._2.contains("lease expired"), freed.toString)
          assertEquals(held.worker.counters.rescued.get, 1L)
      }
  }
