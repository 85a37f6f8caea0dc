package weir.otel

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.{Limit, Pipeline}
import weir.postgres.*

import scala.concurrent.duration.*

/** weir-otel4s-postgres on a durable worker and a real server, read back through the Prometheus endpoint. */
class DurableMetricsSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 3.minutes

  private val all = FinishedState.values.toSet

  private def fixture: Resource[IO, (Database[IO], Prometheus)] =
    for
      db <- TestDatabase.migrated
      _ <- Resource.onFinalize(TestDatabase.drop(db.schema))
      prometheus <- Prometheus.resource
    yield (db, prometheus)

  private val queue = "weir_queue_name"
  private val state = "weir_task_state"

  test(
    "a worker's counters and the queues' depths by state, scraped: what the tasks did and what the database holds"
  ) {
    fixture.use { (db, prometheus) =>
      val worker = DurableWorker.start[IO, Int, Unit](
        db,
        WorkerConfig(queue = "mailer", stopWhenEmpty = true, pollInterval = 50.millis, keepCompleted = true)
      )(source =>
        // every tenth task fails, on its only attempt: dead
        Pipeline(source)
          .process(job =>
            IO.raiseError(new RuntimeException(s"task ${job.payload}")).whenA(job.payload % 10 == 0)
          )
          .withLimit(Limit.fixed(4))
      )
      val depths = QueueDepths.start(db, QueueDepths.Settings(every = 100.millis, finished = all))
      depths.flatMap(d => DurableMetrics.register(prometheus.meter, Some(d), Some(db))).use { metrics =>
        for
          _ <- TaskQueue[IO, Int](db, "mailer").enqueueMany((1 to 50).map(NewTask(_, maxAttempts = 1)))
          _ <- TaskQueue[IO, Int](db, "later").enqueueMany((1 to 3).map(NewTask(_, delay = 1.hour)))
          summary <- metrics.instrument(worker, "mailer").use(_.running.join)
          expected <- TaskAdmin(db).overview.depths(all)
          // the counters of the ended worker, and a count taken after its end
          scraped <- prometheus.await("the run's counts and the depths after it") { e =>
            e.value("weir_durable_completed_total", queue -> "mailer").contains(45.0) &&
            e.value("weir_queue_depth", queue -> "mailer", state -> "completed").contains(45.0)
          }
        yield
          assertEquals(summary.succeeded, 45L)
          def counter(name: String) = scraped.value(s"weir_durable_${name}_total", queue -> "mailer")
          assertEquals(counter("completed"), Some(45.0))
          assertEquals(counter("dead"), Some(5.0))
          assertEquals(counter("retried"), Some(0.0))
          assertEquals(counter("database_errors"), Some(0.0))
          // a claim refused at its start goes back and is claimed again
          assertEquals(counter("claimed"), Some(50.0 + summary.refused))
          assertEquals(counter("refused"), Some(summary.refused.toDouble))
          assertEquals(
            scraped.typeOf("weir_durable_completed_total").orElse(scraped.typeOf("weir_durable_completed")),
            Some("counter")
          )
          // the depths are the database's, state by state, for both queues
          assertEquals(expected.map(_.queue), Vector("later", "mailer"))
          for q <- expected do
            val states = Map(
              "available" -> q.available,
              "scheduled" -> q.scheduled,
              "waiting" -> q.waiting,
              "running" -> q.running
            ) ++ q.finished.map((s, n) => s.name -> n)
            val got = scraped.of("weir_queue_depth", queue -> q.queue).map(s =>
              s.labels(state) -> s.value.toLong
            ).toMap
            assertEquals(got, states)
          assertEquals(scraped.value("weir_queue_depth", queue -> "mailer", state -> "dead"), Some(5.0))
          assertEquals(scraped.value("weir_queue_depth", queue -> "later", state -> "scheduled"), Some(3.0))
          assertEquals(scraped.typeOf("weir_queue_depth"), Some("gauge"))
          assertEquals(scraped.value("weir_queue_oldest_age_seconds", queue -> "later"), Some(0.0))
          assertEquals(scraped.value("weir_queue_depth_failures_total"), Some(0.0))
          // the Database's own counts, given it: no operator's action ran here
          assertEquals(scraped.value("weir_durable_action_deadlocks_total"), Some(0.0))
      }
    }
  }

  test("a queue's counters add up over its workers, and keep what ended workers counted") {
    fixture.use { (db, prometheus) =>
      val run =
        DurableWorker.start[IO, Int, Unit](
          db,
          WorkerConfig(queue = "twice", stopWhenEmpty = true, pollInterval = 50.millis)
        )(source => Pipeline(source).process(_ => IO.unit))
      DurableMetrics.register(prometheus.meter).use { metrics =>
        for
          _ <- TaskQueue[IO, Int](db, "twice").enqueueMany((1 to 10).map(NewTask(_)))
          _ <- metrics.instrument(run, "twice").use(_.running.join)
          first <- prometheus.await("the first run")(_.value(
            "weir_durable_completed_total",
            queue -> "twice"
          ).contains(10.0))
          _ <- TaskQueue[IO, Int](db, "twice").enqueueMany((1 to 7).map(NewTask(_)))
          _ <- metrics.instrument(run, "twice").use(_.running.join)
          second <- prometheus.await("both runs")(_.value(
            "weir_durable_completed_total",
            queue -> "twice"
          ).contains(17.0))
        yield
          // without QueueDepths, no depth is reported
          assertEquals(first.of("weir_queue_depth"), Vector.empty)
          assertEquals(second.value("weir_durable_dead_total", queue -> "twice"), Some(0.0))
      }
    }
  }
