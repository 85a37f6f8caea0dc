package weir.guide

// docs/guide.md, "Testing your handlers": DocSnippetsSuite checks that the guide's block is this code,
// verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import doobie.implicits.*
import weir.*
import weir.postgres.{DurableWorker, NewTask, TaskQueue, WorkerConfig}
import weir.testkit.Eventually
import weir.testkit.postgres.{TestDatabase, TestJob}

object ReceiptIntegrationTest:
  // completeIn answers as a claim would: true for the run that completes the task, false after
  val completesOnce: IO[(Boolean, Boolean, Int)] =
    TestDatabase.resource[IO]().use { db =>
      for
        built <- TestJob(Receipt(8, 300)).build[IO]
        first <- built.job.completeIn.transact(db.transactor)
        again <- built.job.completeIn.transact(db.transactor)
        completions <- built.completions
      yield (first, again, completions) // (true, false, 1)
    }

  // a worker on a migrated schema of its own, dropped afterwards; Eventually waits for what it does
  val workedThrough: IO[Long] =
    TestDatabase.resource[IO]().use { db =>
      val receipts = TaskQueue[IO, Receipt](db, "receipts")
      IO.ref(0L).flatMap { sent =>
        DurableWorker
          .start[IO, Receipt, Unit](db, WorkerConfig(queue = "receipts")) { source =>
            Pipeline(source).process(job => sent.update(_ + job.payload.cents))
          }
          .use { _ =>
            receipts.enqueueMany(List(NewTask(Receipt(1, 100)), NewTask(Receipt(2, 250)))) *>
              Eventually.until("both receipts sent", sent.get)(_ == 350L)
          }
      }
    }
