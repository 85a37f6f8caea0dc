package weir.postgres

import cats.effect.IO
import org.typelevel.log4cats.LoggerFactory
import weir.testing.RecordedLogs
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * An operator's action that the server aborts as a deadlock, on a real server: run again, counted in the
 * `Database`'s stats and logged once. The deadlock is made on purpose: a session of the test's holds the
 * second of two tasks while the cancel, which locks them in id order, holds the first and waits for it;
 * then the session asks for the first. The cancel waited first, so its deadlock check runs first, finds
 * the cycle and aborts its own transaction; its second run waits for the session's commit and succeeds.
 */
class ActionDeadlockSuite extends DbSuite:

  withDb("a cancel aborted as a deadlock is run again, counted in Database.stats and logged once") {
    migrated =>
      RecordedLogs().flatMap { logs =>
        given LoggerFactory[IO] = logs
        Database.connect[IO](TestDatabase.config(migrated.schema)).use { db =>
          val tasks = db.schema("tasks")
          val (jdbc, props) = DatabaseConfig.toJdbc(TestDatabase.url)
          val session = cats.effect.Resource.make(IO.blocking {
            val c = java.sql.DriverManager.getConnection(jdbc, props)
            c.setAutoCommit(false)
            c
          })(c => IO.blocking(c.close()))
          def lock(c: java.sql.Connection, id: Long) =
            IO.blocking(c.createStatement().execute(s"SELECT 1 FROM $tasks WHERE id = $id FOR UPDATE")).void
          // the cancel's statement, waiting for a row lock (it names this test's own schema)
          val cancelWaits = IO.blocking {
            val c = java.sql.DriverManager.getConnection(jdbc, props)
            try
              val rs = c.createStatement().executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' " +
                  s"AND query LIKE '%${db.schema.name}%' AND pid <> pg_backend_pid()"
              )
              rs.next()
              rs.getLong(1) > 0
            finally c.close()
          }
          for
            enqueued <- TaskQueue[IO, Int](db, "locked").enqueueMany(Vector(NewTask(1), NewTask(2)))
            Vector(first, second) = enqueued.map(_.taskId).sorted: @unchecked
            cancel = TaskAdmin(db, Operator("ada")).tasks.cancelMany(Vector(first, second), "test")
            // the cancel runs owned by the session's scope: a failure before its join cancels it
            cancels <- session.use(c =>
              lock(c, second) *> cancel.background.use { running =>
                for
                  _ <-
                    Eventually.until("the cancel waits for the second task's lock", cancelWaits, 30.seconds)(
                      identity
                    )
                  // a cycle: the server aborts the cancel, which waited first, and this lock is granted
                  _ <- lock(c, first)
                  _ <- IO.blocking(c.commit())
                  done <- running.flatMap(_.embedNever)
                yield done
              }
            )
            stats <- db.stats
            lines <- logs.lines
          yield
            assertEquals(cancels, Vector(Cancel.Cancelled, Cancel.Cancelled))
            assertEquals(stats, DatabaseStats(deadlocksRetried = 1))
            val warned = lines.filter(_.logger == "weir.postgres.actions")
            assertEquals(warned.map(_.level), Vector("WARN"), lines)
            assert(
              warned.head.message.startsWith(
                "ada's cancel of 2 tasks was aborted by the server as a deadlock (run 1 of 5) and is run again: " +
                  "ERROR: deadlock detected"
              ),
              warned.head.message
            )
        }
      }
  }
