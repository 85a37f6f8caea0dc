package weir.postgres

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.{Limit, Pipeline}
import weir.testkit.Eventually

import scala.concurrent.duration.*

/** The README's and the guide's examples, run against the test server. */
class DurableExampleSuite extends DbSuite:

  case class Email(to: String, subject: String) derives io.circe.Codec.AsObject

  test("the README's example: enqueue with a key, work it, drain") {
    val config = TestDatabase.config(TestDatabase.freshSchema())
    for
      sent <- Ref[IO].of(Vector.empty[Email])
      send = (e: Email) => sent.update(_ :+ e)
      _ <- Database.migrateAndConnect[IO](config).use { db =>
        val emails = TaskQueue[IO, Email](db, "emails")
        emails.enqueue(NewTask(Email("a@b.c", "hello"), orderingKey = Some("account-7"))) *>
          DurableWorker
            .start[IO, Email, Unit](
              db,
              WorkerConfig(queue = "emails", heartbeat = 200.millis, deadAfter = 1.second)
            ) {
              source => Pipeline(source).process(job => send(job.payload)).withLimit(Limit.fixed(50))
            }
            .use(worker =>
              Eventually.until("an email sent", sent.get, 60.seconds, 20.millis)(_.nonEmpty) *>
                worker.drain(10.seconds).void
            )
      }
      _ <- TestDatabase.drop(config.schema)
      _ <- noLeftovers
      out <- sent.get
    yield assertEquals(out, Vector(Email("a@b.c", "hello")))
  }

  withDb("the guide's outbox, SQL function and exactly-once completion") { db =>
    val emails = TaskQueue[IO, Email](db, "emails")
    val orders = db.schema("orders")
    def insertOrder(id: Int) = Fragment.const(s"INSERT INTO $orders VALUES ($id)").update.run
    for
      _ <- Fragment.const(s"CREATE TABLE $orders (id int PRIMARY KEY)").update.run.transact(db.transactor)
      _ <- (insertOrder(1) *> emails.enqueueIn(NewTask(Email("a@b.c", "thanks")))).transact(db.transactor)
      viaSql <- Rows.enqueueSql(
        s"""${db.schema("enqueue")}('emails', '{"to": "d@e.f", "subject": "welcome"}', priority => 1, max_attempts => 5, unique_key => 'welcome-42')"""
      )
      shipped = db.schema("shipments")
      _ <- Fragment.const(s"CREATE TABLE $shipped (email text)").update.run.transact(db.transactor)
      _ <- DurableWorker
        .start[IO, Email, Unit](
          db,
          WorkerConfig(queue = "emails", stopWhenEmpty = true, pollInterval = 50.millis)
        ) {
          source =>
            Pipeline(source).process { job =>
              (Fragment.const(s"INSERT INTO $shipped VALUES ('${job.payload.to}')").update.run *>
                job.completeIn.flatMap(held =>
                  FC.raiseError[Unit](new IllegalStateException("lost")).unlessA(held)
                ))
                .transact(db.transactor)
            }
        }
        .use(_.running.join)
      shippedTo <- Fragment.const(
        s"SELECT email FROM $shipped ORDER BY 1"
      ).query[String].to[Vector].transact(db.transactor)
      stats <- TaskAdmin(db).overview.stats
    yield
      assert(viaSql._2)
      assertEquals(shippedTo, Vector("a@b.c", "d@e.f"))
      assertEquals(stats, Vector.empty[QueueStats])
  }
