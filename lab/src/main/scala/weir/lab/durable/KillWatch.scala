package weir.lab.durable

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*

import scala.concurrent.duration.*

/**
 * Follows one killed worker until the others have rescued its tasks: the lab's record of why a rescue came
 * late. The others find a dead worker within a heartbeat only once the server has freed its session lock,
 * which happens when the server process that served the session ends; until then they wait for
 * `deadAfter`. So the watch reports when the lock was freed, and, every two seconds while the worker's
 * tasks are still running under its name, which backends of the database are busy and with what (a
 * lingering session, a rescue waiting for a lock or a connection, a starved server).
 */
object KillWatch:

  private val every = 50.millis
  private val reportEvery = 2000.0

  /**
   * Polls every 50 ms from the kill (`atMillis`, the database's clock) until the lock is freed and no task
   * runs under the worker's name, or `limit` has passed; the time from the kill to the first poll that
   * found the lock freed, if one did (an upper bound: on a starved machine the lab's own polls come late).
   */
  def follow(lab: LabDatabase, workerId: Long, atMillis: Double, limit: FiniteDuration): IO[Option[Double]] =
    val lockId = workerId % 2147483648L
    val state =
      (Fragment.const(s"""SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8,
        EXISTS (SELECT 1 FROM pg_locks AS l
                WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.objid::bigint = $lockId
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())),
        (SELECT count(*) FROM ${lab.schema("tasks")} WHERE state = 'running' AND lease_owner = """) ++
        fr0"$workerId" ++ Fragment.const(")")).query[(Double, Boolean, Long)].unique
    val busy =
      Fragment.const(s"""SELECT a.pid, a.state, coalesce(a.wait_event_type || ':' || a.wait_event, '-'),
        coalesce(round(extract(epoch FROM clock_timestamp() - a.query_start) * 1000)::bigint, 0),
        left(regexp_replace(coalesce(a.query, ''), '\\s+', ' ', 'g'), 60),
        EXISTS (SELECT 1 FROM pg_locks AS l
                WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.objsubid = 2 AND l.objid::bigint = $lockId)
      FROM pg_stat_activity AS a
      WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
        AND a.state <> 'idle'
      ORDER BY a.query_start""").query[(
          Int,
          String,
          String,
          Long,
          String,
          Boolean
      )].to[Vector]
    def say(db: Transactor[IO], since: Double, held: Boolean, running: Long): IO[Unit] =
      busy.transact(db).flatMap { backends =>
        val lines = backends.map { (pid, st, wait, ms, query, holder) =>
          s"$pid${if holder then " (its session)" else ""} $st $wait ${ms} ms: $query"
        }
        IO.consoleForIO.errorln(
          f"  [lab] worker $workerId, ${since / 1000}%.1f s after its kill: session lock " +
            s"${if held then "held" else "freed"}, $running task(s) still running under it; busy backends:" +
            lines.map("\n    " + _).mkString
        )
      }
    // (lock first seen freed, reports made): kept across the sessions of a watch that a restart interrupts
    Ref[IO].of((Option.empty[Double], 0)).flatMap { seen =>
      def loop(db: Transactor[IO]): IO[Option[Double]] =
        (state.transact(db), seen.get).flatMapN { case ((now, held, running), (freed, reported)) =>
          val since = now - atMillis
          val freedNow = freed.orElse(Option.when(!held)(since))
          if (freedNow.isDefined && running == 0) || since > limit.toMillis then IO.pure(freedNow)
          else
            val due = running > 0 && since >= reportEvery * (reported + 1)
            say(db, since, held, running).whenA(due) *>
              seen.set((freedNow, if due then reported + 1 else reported)) *> IO.sleep(every) *> loop(db)
        }
      // one connection for the whole watch (a new one every 50 ms would load the machine it watches), opened
      // again when a restart ends it
      Retrying(s"the watch of worker $workerId")(lab.session.use(loop))
    }
