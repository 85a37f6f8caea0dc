package weir.guide.durable

// docs/durable.md, "Exactly-once for writes to the same database": DocSnippetsSuite checks that the page's
// block is this code, verbatim.

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import io.circe.Codec
import weir.Pipeline
import weir.postgres.*

final case class Shipment(order: Long, address: String) derives Codec.AsObject

object Shipping:
  def insertShipment(s: Shipment): ConnectionIO[Int] =
    sql"INSERT INTO shipments (order_id, address) VALUES (${s.order}, ${s.address})".update.run

  // the shipment's row and the task's completion commit together, or neither does
  def worker(db: Database[IO]): Resource[IO, DurableWorker[IO, Shipment]] =
    DurableWorker.start[IO, Shipment, Unit](db, WorkerConfig(queue = "shipments")) { source =>
      Pipeline(source).process { job =>
        // completeIn is false when the claim is no longer this worker's (it was rescued): roll back
        (insertShipment(job.payload) *> job.completeIn)
          .flatMap(held => FC.raiseError[Unit](new IllegalStateException("claim lost")).unlessA(held))
          .transact(db.transactor)
      }
    }
