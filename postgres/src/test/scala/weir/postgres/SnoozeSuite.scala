package weir.postgres

import cats.effect.{IO, Ref}
import io.circe.Codec
import weir.{Limit, Pipeline}

import scala.concurrent.duration.*

/**
 * A handler's snooze ([[Job.snooze]] under [[DurableWorker.startSnoozing]]) against a real server: the task
 * goes back for later, its attempt uncounted, its key waiting for it, and comes back with its payload's
 * type, the handler keeping its result type; a negative wait fails the attempt naming it; and a worker that
 * completes every success does not compile with a handler whose value may be a snooze.
 */
class SnoozeSuite extends DbSuite:
  import SnoozeSuite.*

  withDb("a snooze puts the task back for later without counting its attempt, and its key waits for it") {
    db =>
      val queue = TaskQueue[IO, String](db, "s")
      val config = TestWorkers.config("s")
      for
        _ <- queue.enqueueMany(Vector(
          NewTask("a", orderingKey = Some("k")),
          NewTask("b", orderingKey = Some("k"))
        ))
        calls <- Ref[IO].of(Vector.empty[(String, Int)])
        stats <- TestWorkers.statsAfterRun(DurableWorker.startSnoozing[IO, String, Unit](db, config) {
          source =>
            Pipeline(source).process { job =>
              calls.modify { seen =>
                val first = !seen.exists(_._1 == job.payload)
                (seen :+ (job.payload -> job.attempt), first)
              }.map(first => if job.payload == "a" && first then job.snooze(300.millis) else Handled.Done(()))
            }.withLimit(Limit.fixed(4))
        })
        order <- calls.get
        done <- Rows.finished(db)
      yield
        // a ran twice, each as attempt 1; b only after a had finished
        assertEquals(order, Vector("a" -> 1, "a" -> 1, "b" -> 1))
        assertEquals(
          done.map(d => (d._1, d._2, d._3)),
          Vector(("\"a\"", "completed", 1), ("\"b\"", "completed", 1))
        )
        assertEquals((stats.snoozed, stats.completed), (1L, 2L))
  }

  withDb("a snoozed task comes back with its payload's type, and its handler keeps its result type") { db =>
    val invoice = Invoice("acct-7", 1250L)
    for
      _ <- TaskQueue[IO, Invoice](db, "invoices").enqueue(NewTask(invoice))
      seen <- Ref[IO].of(Vector.empty[(Invoice, Int, Handled[Receipt])])
      // the ledger is closed at the first look and open at the second
      looks <- Ref[IO].of(0)
      handler: (Job[Invoice] => IO[Handled[Receipt]]) = job =>
        looks.getAndUpdate(_ + 1).map { n =>
          if n == 0 then job.snooze(200.millis)
          else Handled.Done(Receipt(job.payload.account, job.payload.cents))
        }.flatTap(answer => seen.update(_ :+ (job.payload, job.attempt, answer)))
      stats <- TestWorkers.statsAfterRun(
        DurableWorker.startSnoozing[IO, Invoice, Receipt](db, TestWorkers.config("invoices"))(source =>
          Pipeline(source).process(handler)
        )
      )
      answers <- seen.get
      done <- Rows.finished(db)
    yield
      assertEquals(
        answers,
        Vector(
          (invoice, 1, Handled.Snoozed(200.millis)),
          (invoice, 1, Handled.Done(Receipt("acct-7", 1250L)))
        )
      )
      assertEquals(done.map(d => (d._2, d._3)), Vector(("completed", 1)))
      assertEquals((stats.snoozed, stats.completed, stats.retried), (1L, 1L, 0L))
  }

  withDb("a negative snooze fails its attempt with an error naming the value, as a failure would") { db =>
    val queue = TaskQueue[IO, String](db, "neg")
    for
      _ <- queue.enqueue(NewTask("a", maxAttempts = 1))
      _ <- TestWorkers.statsAfterRun(
        DurableWorker.startSnoozing[IO, String, Unit](db, TestWorkers.config("neg")) { source =>
          Pipeline(source).process(job => IO.pure(job.snooze(-5.seconds)))
        }
      )
      done <- Rows.finished(db)
    yield
      assertEquals(done.map(d => (d._1, d._2, d._3)), Vector(("\"a\"", "dead", 1)))
      assert(done.head._4.contains("a snooze must be >= 0, was: -5 seconds"), done.head._4)
  }

  test("a snooze below zero throws nothing when built and names its value") {
    assertEquals(Handled.Snoozed(-1.second).errors, List("a snooze must be >= 0, was: -1 seconds"))
    assertEquals(Handled.Snoozed(0.seconds).errors, Nil)
  }

  test("start, which completes every success, does not compile with a handler whose value may be a snooze") {
    val refused = List(
      compileErrors(
        "(db: Database[IO]) => DurableWorker.start[IO, String, Any](db, WorkerConfig(queue = \"q\"))(source =>" +
          " Pipeline(source).process(job => IO.pure(job.snooze(1.second))))"
      ),
      compileErrors(
        "(db: Database[IO]) => DurableWorker.start[IO, String, Handled[Int]](db, WorkerConfig(queue = \"q\"))(" +
          "source => Pipeline(source).process(_ => IO.pure(Handled.Done(1))))"
      )
    )
    refused.foreach(errors =>
      assert(
        errors.contains("may be a snooze: start a handler that snoozes with DurableWorker.startSnoozing"),
        errors
      )
    )
    assertEquals(
      compileErrors(
        "(db: Database[IO]) => DurableWorker.start[IO, String, Int](db, WorkerConfig(queue = \"q\"))(source =>" +
          " Pipeline(source).process(job => IO.pure(job.payload.length)))"
      ),
      ""
    )
  }

object SnoozeSuite:
  final case class Invoice(account: String, cents: Long) derives Codec.AsObject
  final case class Receipt(account: String, cents: Long)
