package weir.postgres

import cats.effect.{Deferred, IO}
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.Pipeline
import weir.testkit.Eventually

import java.time.OffsetDateTime

import scala.concurrent.duration.*

/**
 * Connections that go silent for good, neither answering nor closing (a network partition, a failover, a
 * NAT that forgot the flow): the worker's own connections give up after `readTimeout` and it carries on
 * on new ones. Without the timeout the kernel would keep each of them waiting for many minutes.
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

  withDb(
    "after every open connection goes silent, a worker drops them after readTimeout and still runs the next task"
  ) {
    db =>
      val worker =
        WorkerConfig(queue = "p", pollInterval = 1.hour, heartbeat = 200.millis, deadAfter = 1.minute)
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
                    w.stats.flatMap(s => IO(fail(s"the worker did not recover: $s")))
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
