package weir.postgres

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.{Limit, Pipeline}

import scala.concurrent.duration.*

/** A worker's own connections: asynchronous commits, scoped to each transaction. */
class WorkerPoolSuite extends DbSuite:

  /**
   * A table `probe` and a deferred trigger function that records, at commit, the operation and the
   * `synchronous_commit` the committing transaction has then; returns the statement that attaches it.
   */
  private def probe(db: Database[IO]): IO[String => String] =
    val fn = db.schema("probe_commit")
    Rows.exec(s"CREATE TABLE ${db.schema("probe")} (at text, setting text)") *>
      Rows.exec(
        s"""CREATE FUNCTION $fn() RETURNS trigger LANGUAGE plpgsql AS $$$$ BEGIN
             INSERT INTO ${db.schema("probe")}
             VALUES (TG_TABLE_NAME || ' ' || TG_OP, current_setting('synchronous_commit'));
             RETURN NULL; END $$$$"""
      ) *>
      IO.pure(table =>
        s"""CREATE CONSTRAINT TRIGGER probe_commit AFTER INSERT OR UPDATE OR DELETE ON ${db.schema(table)}
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION $fn()"""
      )

  private def probed(db: Database[IO]): IO[Vector[(String, String)]] =
    Fragment.const(s"SELECT at, setting FROM ${db.schema("probe")}").query[(
        String,
        String
    )].to[Vector].transact(
      TestDatabase.admin
    )

  /**
   * `db`'s schema through connections whose session starts with `synchronous_commit = on`, whatever the
   * server's default (the embedded server's is off), so that what a worker sets shows.
   */
  private def sessionOn(db: Database[IO]): Resource[IO, Database[IO]] =
    val url = TestDatabase.url
    val option = "options=-c%20synchronous_commit%3Don"
    Database.connect[IO](TestDatabase.config(db.schema).copy(url =
      url + (if url.contains("?") then "&" else "?") + option
    ))

  withDb("a worker commits its claims, results and heartbeats asynchronously") { db =>
    val queue = TaskQueue[IO, Int](db, "async")
    for
      attach <- probe(db)
      _ <- queue.enqueueMany((1 to 30).map(NewTask(_)))
      _ <- Rows.exec(attach("tasks"))
      _ <- Rows.exec(attach("workers"))
      // long enough for heartbeats (every 200 ms) to commit while the tasks run
      _ <- sessionOn(db).use(on =>
        DurableWorker
          .start[IO, Int, Unit](on, TestWorkers.config("async"))(
            Pipeline(_).process(_ => IO.sleep(30.millis)).withLimit(Limit.fixed(1))
          )
          .use(_.running.join)
      )
      seen <- probed(db)
    yield
      val at = seen.map(_._1).toSet
      assert(
        Set("tasks UPDATE", "tasks DELETE", "workers INSERT", "workers UPDATE").subsetOf(at),
        at.toString
      )
      assertEquals(seen.filter(_._2 != "off"), Vector.empty)
  }

  withDb("a worker connection's session setting is unchanged after its transactions") { db =>
    for
      attach <- probe(db)
      table = db.schema("touched")
      _ <- Rows.exec(s"CREATE TABLE $table (n int)")
      _ <- Rows.exec(attach("touched"))
      // one connection: both transactions run on the same session
      seen <- sessionOn(db).flatMap(_.workerPool(size = 1)).use { run =>
        for
          first <- run(
            Fragment.const(s"INSERT INTO $table VALUES (1)").update.run *>
              sql"SELECT pg_backend_pid()".query[Int].unique
          )
          next <- run(sql"SELECT pg_backend_pid(), current_setting('synchronous_commit')".query[(
              Int,
              String
          )].unique)
        yield (first, next)
      }
      committed <- probed(db)
    yield
      val (firstPid, (nextPid, session)) = seen
      assertEquals(nextPid, firstPid, "not the same connection")
      assertEquals(committed, Vector(("touched INSERT", "off")), "the worker's commit was not asynchronous")
      assertEquals(session, "on", "the worker's setting outlived its transaction")
  }
