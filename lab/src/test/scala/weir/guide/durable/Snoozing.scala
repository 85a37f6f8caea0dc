package weir.guide.durable

// docs/durable.md, "Snooze": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.{IO, Resource}
import io.circe.Codec
import weir.Pipeline
import weir.postgres.*

import scala.concurrent.duration.*

final case class Invoice(account: String, cents: Long) derives Codec.AsObject
final case class Receipt(invoice: Invoice, number: Long)

trait Ledger:
  def isOpen(account: String): IO[Boolean]
  def post(invoice: Invoice): IO[Receipt]

object Invoices:
  // an invoice of a closed account comes back in ten minutes, its attempt not counted
  def worker(db: Database[IO], ledger: Ledger): Resource[IO, DurableWorker[IO, Invoice]] =
    DurableWorker.startSnoozing[IO, Invoice, Receipt](db, WorkerConfig(queue = "invoices")) { source =>
      Pipeline(source).process { job =>
        ledger.isOpen(job.payload.account).flatMap { open =>
          if open then ledger.post(job.payload).map(Handled.Done(_)) else IO.pure(job.snooze(10.minutes))
        }
      }
    }
