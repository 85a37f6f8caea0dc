package weir.guide.durable

// docs/durable.md, "Workflows": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.{IO, Resource}
import doobie.implicits.*
import io.circe.Codec
import weir.Pipeline
import weir.postgres.*

final case class Fetch(url: String) derives Codec.AsObject
final case class Merge(name: String) derives Codec.AsObject
final case class PageSize(bytes: Long) derives Codec.AsObject

object Workflows:
  // two fetches, and a merge in another queue that runs once both have completed
  def enqueue(db: Database[IO]): IO[Map[String, Enqueued]] =
    val fetches = TaskQueue[IO, Fetch](db, "fetches")
    val merges = TaskQueue[IO, Merge](db, "merges")
    TaskGraph.empty
      .add("a", fetches, NewTask(Fetch("https://a.example")))
      .add("b", fetches, NewTask(Fetch("https://b.example")))
      .add("merge", merges, NewTask(Merge("a+b")), after = Vector(After.completed("a"), After.completed("b")))
      .enqueue(db) // each handle's Enqueued

  // after a task enqueued earlier, by id: a report that runs however the import ends
  def report(db: Database[IO], importId: Long): IO[Enqueued] =
    val merges = TaskQueue[IO, Merge](db, "merges")
    merges.enqueue(NewTask(Merge("report"), after = Vector(After.finished(importId))))

  // each fetch completes with its result, kept with its finished row
  def fetcher(db: Database[IO], get: String => IO[String]): Resource[IO, DurableWorker[IO, Fetch]] =
    DurableWorker.startRecording[IO, Fetch, PageSize](db, WorkerConfig(queue = "fetches")) { source =>
      Pipeline(source).process(job => get(job.payload.url).map(body => PageSize(body.length.toLong)))
    }

  // the merge reads its parents and their results: one read, in a transaction of yours
  def merger(db: Database[IO]): Resource[IO, DurableWorker[IO, Merge]] =
    DurableWorker.start[IO, Merge, Unit](db, WorkerConfig(queue = "merges")) { source =>
      Pipeline(source).process { job =>
        job.parents.transact(db.transactor).flatMap { parents =>
          val total = parents.flatMap(_.resultAs[PageSize].toOption.flatten).map(_.bytes).sum
          IO.println(s"${job.payload.name}: $total bytes")
        }
      }
    }
