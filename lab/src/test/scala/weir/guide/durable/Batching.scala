package weir.guide.durable

// docs/durable.md, "Batches": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.{IO, Resource}
import doobie.implicits.*
import io.circe.Codec
import weir.Pipeline
import weir.postgres.*

final case class Newsletter(to: String) derives Codec.AsObject
final case class CampaignSent(name: String) derives Codec.AsObject

object Batching:
  // one email per address, and a report that runs once, when every email has ended
  def send(db: Database[IO], campaign: String, addresses: Vector[String]): IO[BatchId] =
    val batches = Batches(db)
    val reports = TaskQueue[IO, CampaignSent](db, "reports")
    for
      batch <- batches.open(reports, NewTask(CampaignSent(campaign)))
      _ <- batches.add(
        batch,
        TaskQueue[IO, Newsletter](db, "emails"),
        addresses.map(a => NewTask(Newsletter(a)))
      )
      _ <- batches.close(batch) // no member can be added now: the report runs once they have all ended
    yield batch

  // the same in one transaction of yours: the batch, its members and its close commit together
  def sendIn(db: Database[IO], campaign: String, addresses: Vector[String]): IO[BatchId] =
    val batches = Batches(db)
    val program =
      for
        batch <- batches.openIn(TaskQueue[IO, CampaignSent](db, "reports"), NewTask(CampaignSent(campaign)))
        _ <- batches.addIn(
          batch,
          TaskQueue[IO, Newsletter](db, "emails"),
          addresses.map(a => NewTask(Newsletter(a)))
        )
        _ <- batches.closeIn(batch)
      yield batch
    program.transact(db.transactor)

  // the callback reads what its batch ended with: one read, in a transaction of yours
  def reporter(db: Database[IO]): Resource[IO, DurableWorker[IO, CampaignSent]] =
    DurableWorker.start[IO, CampaignSent, Unit](db, WorkerConfig(queue = "reports")) { source =>
      Pipeline(source).process { job =>
        job.batch.transact(db.transactor).flatMap(read =>
          IO.println(read.fold("not a callback")(b =>
            s"${job.payload.name}: ${b.completed} of ${b.members} sent"
          ))
        )
      }
    }

  // how far a batch has come, at any time
  def progress(db: Database[IO], batch: BatchId): IO[String] =
    Batches(db).progress(batch).map {
      case Some(b) => s"${b.finished} of ${b.members} ended${if b.closed then "" else ", open"}"
      case None => s"no $batch"
    }
