package weir.postgres

import cats.effect.{Deferred, IO, Sync}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.Pipeline
import weir.postgres.internal.{Completer, Finish, HeldClaims}
import weir.testkit.Eventually

import java.time.OffsetDateTime
import java.util.concurrent.{CountDownLatch, TimeUnit}

import scala.concurrent.duration.*

/**
 * Connections that go silent for good, neither answering nor closing (a network partition, a failover, a
 * NAT that forgot the flow): the worker's own connections give up after `readTimeout` and it carries on
 * on new ones. Without the timeout the kernel would keep each of them waiting for many minutes. A
 * transaction such a connection left open on the server, its commit never sent, is ended by the server after
 * the same timeout, so that the rows it holds are written again.
 */
class PartitionSuite extends DbSuite:

  private val serverNow: IO[OffsetDateTime] =
    sql"SELECT now()".query[OffsetDateTime].unique.transact(TestDatabase.admin)

  private def sessionSince(db: Database[IO]): IO[Option[OffsetDateTime]] =
    Fragment
      .const(s"SELECT max(session_since) FROM ${db.schema("workers")}")
      .query[Option[OffsetDateTime]]
      .unique
      .transact(TestDatabase.admin)

  private def heartbeatAt(db: Database[IO]): IO[OffsetDateTime] =
    Fragment
      .const(s"SELECT max(heartbeat_at) FROM ${db.schema("workers")}")
      .query[OffsetDateTime]
      .unique
      .transact(TestDatabase.admin)

  /** The sessions of the test server, with what each waits for: why a worker did not recover, if it did not. */
  private val serverSessions: IO[String] =
    sql"""SELECT state || ' ' || coalesce(wait_event_type || ':' || wait_event, '-') || ' ' ||
                 coalesce(now() - xact_start, '0')::text || ' ' || left(query, 120)
          FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"""
      .query[String].to[List].transact(TestDatabase.admin).map(_.mkString("\n"))

  withDb(
    "after every open connection goes silent, a worker drops them after readTimeout and still runs the next task"
  ) {
    db =>
      val worker =
        WorkerConfig(queue = "p", pollInterval = 1.hour, heartbeat = 1.second, deadAfter = 1.minute)
      BlackholeProxy.to(TestDatabase.url).use { proxy =>
        val through =
          TestDatabase.config(db.schema).copy(url = proxy.url(TestDatabase.url), readTimeout = 1.second)
        for
          first <- Deferred[IO, Unit]
          second <- Deferred[IO, Unit]
          stats <- Database.connect[IO](through).use { viaProxy =>
            DurableWorker
              .start[IO, Int, Unit](viaProxy, worker)(Pipeline(_).process(job =>
                (if job.payload == 1 then first else second).complete(()).void
              ))
              .use { w =>
                for
                  // the worker works (its pools and session open) before the partition
                  _ <- TaskQueue[IO, Int](db, "p").enqueue(NewTask(1)) *> first.get.timeout(20.seconds)
                  cut <- serverNow
                  _ <- IO.blocking(proxy.blackholeOpen())
                  // the notification is lost with the silent session, the claim hangs on a silent pooled
                  // connection: only dropping both, after readTimeout, lets this task run
                  _ <- TaskQueue[IO, Int](db, "p").enqueue(NewTask(2))
                  _ <- second.get.timeoutTo(
                    60.seconds,
                    (w.stats, serverSessions).flatMapN((s, sessions) =>
                      IO(fail(s"the worker did not recover: $s; the server's sessions:\n$sessions"))
                    )
                  )
                  // the heartbeat's connection was in use when it went silent, so no pool check replaced it
                  _ <- Eventually.until(
                    "the worker's heartbeat to resume",
                    heartbeatAt(db),
                    30.seconds,
                    100.millis
                  )(
                    _.isAfter(cut)
                  )
                  // the silent session still holds the worker's lock on the server; the new one ends it and
                  // takes the lock, so that the worker's death is again seen at once
                  _ <- Eventually.until(
                    "the worker's new session to take its lock",
                    sessionSince(db),
                    30.seconds,
                    100.millis
                  )(
                    _.exists(_.isAfter(cut))
                  )
                  stats <- w.stats
                yield stats
              }
          }
        yield assert(stats.databaseErrors >= 1, stats.toString)
      }
  }

  withDb(
    "a transaction whose connection went silent before its commit is ended by the server after readTimeout: the results queued behind it are written"
  ) { db =>
    val config = TestWorkers.config("o")
    Database.connect[IO](TestDatabase.config(db.schema).copy(readTimeout = 1.second)).use { timed =>
      HeldClaims.of(timed, 2, config).use { held =>
        val Vector(ran, refused) = held.tokens
        val counters = held.worker.counters
        val entered = new CountDownLatch(1)
        val release = new CountDownLatch(1)
        // what the server keeps of a batch of results whose connection went silent once its statement had
        // run, before its commit was sent: a transaction left open, holding the row of `ran`
        val silent = timed.workerPool(size = 1).use(run =>
          // the wait blocks its thread: on the blocking pool, not on one of the runtime's compute threads
          run(held.worker.sql.complete(Array(ran), keep = true, keyed = false) <*
            Sync[ConnectionIO].blocking {
              entered.countDown()
              release.await()
            })
        )
        // the test waits for that transaction's own end rather than cancel it: it ends once released, on
        // the connection the server closed (or, had the server not ended it, with its commit)
        silent.attempt.background.use(ended =>
          for
            began <- IO.blocking(entered.await(30, TimeUnit.SECONDS))
            _ = assert(began, "the transaction left open did not run its statement")
            // the completion of `ran` written again on another connection, and the hand-back of a refused
            // claim queued behind it: both wait for the row the open transaction holds until the server ends it
            written <- timed.workerPool(size = 2).use(pool =>
              Completer.resource(pool, held.worker, IO.unit, HeldClaims.silent(held.worker)).use(c =>
                (c.submit(Finish.Complete(ran)) *> c.submit(Finish.HandBack(refused)) *>
                  Eventually.until(
                    "the results queued behind the open transaction to be written",
                    IO((counters.completed.get, counters.handedBack.get)),
                    20.seconds,
                    50.millis
                  )(_ == (1L, 1L)))
                  // released before the completer is, so that a write still waiting for the row ends
                  .guarantee(IO(release.countDown()))
              )
            )
            end <- ended.flatMap(_.embedNever)
          yield
            assertEquals(written, (1L, 1L))
            assert(
              end.left.exists(_.getMessage.contains("idle-in-transaction timeout")),
              s"the server did not end the transaction left open: $end"
            )
        )
      }
    }
  }
