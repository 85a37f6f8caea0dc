package weir.postgres

import weir.{Retry, Validation}

import scala.concurrent.duration.*

/**
 * How a worker process serves one queue. Built by name, with defaults:
 * `WorkerConfig(queue = "emails", claimBatch = 50)`.
 *
 *   - `claimBatch`: tasks claimed per statement, at most; a worker claims again as soon as the pipeline's
 *     buffer takes a batch, so claimed tasks wait in memory for at most a buffer's worth of work.
 *   - `pollInterval`: how often an idle worker looks for tasks without being notified (tasks whose run-at
 *     arrives, retries, rescues, and every task when notifications are off or lost).
 *   - `listen`: join the session that the workers of its [[Database]] share (one connection, outside the
 *     pools), to wake up on LISTEN/NOTIFY and to hold a lock that the server frees when the process dies. Off behind a transaction-mode PgBouncer,
 *     which drops notifications and shares sessions: the worker then polls, and is judged dead by its
 *     heartbeat alone.
 *   - `heartbeat`: the period by which the worker is judged alive: it marks itself alive twice per period,
 *     extending in the same statement its claims' leases that are due (`lease`), and a claim starts only
 *     while the last mark that committed is younger than three quarters of a period (see [[Job.tryStart]]).
 *   - `deadAfter`: a worker whose heartbeat is older than this is dead, and its running tasks are rescued
 *     by any other worker (the check runs every `heartbeat / 4`). A listening worker whose process died is
 *     found sooner, once its session has ended and its heartbeat is one period late; `deadAfter` is for a
 *     lost machine or network, and for a live worker it is the longest pause (GC, a starved CPU, a
 *     database outage) it may take without its tasks being run again elsewhere.
 *   - `lease`: a claimed task's own lease, extended while its worker holds it (by a beat, once the lease is
 *     a quarter of a lease old); a task whose lease expired is rescued even if its worker still heartbeats
 *     (the rescuers look for expired leases every quarter of a lease: it is a claim its worker lost track
 *     of, which a live worker's beat never lets happen).
 *   - `backoff`: the wait before a failed task's next attempt, from its base, factor, maximum and jitter,
 *     and which errors are retried at all (`retryOn`); the number of attempts is each task's own
 *     `maxAttempts`, not the `Retry`'s.
 *   - `keepCompleted`: move completed tasks to the `finished` table (until pruned) rather than delete them
 *     (dead tasks are always kept).
 *   - `retention`: how long finished tasks are kept before this worker prunes them (`None`: never).
 *   - `ackBatch`: acknowledgements written per statement, at most.
 *   - `releaseGrace`: on release, how long running tasks may go on before they are interrupted (and
 *     handed back for another attempt), and then how long the worker waits for an unreachable database to
 *     take the last results.
 *   - `stopWhenEmpty`: end the run once the queue has no unfinished task anywhere (batch jobs, tests);
 *     otherwise the worker serves the queue until it is drained or released.
 *   - `name`: shown in the workers table.
 *   - `maxResultBytes`: the most JSON, in bytes of UTF-8, that a handler of [[DurableWorker.startRecording]]
 *     may store as its task's result; a larger one sends the task to dead, naming its size.
 *
 * Building or copying a config never throws: [[DurableWorker.start]] checks it ([[errors]]) and fails, before
 * it opens a connection, with one [[weir.InvalidSettings]] naming every bad value.
 */
final case class WorkerConfig(
    queue: String,
    claimBatch: Int = 500,
    pollInterval: FiniteDuration = 1.second,
    listen: Boolean = true,
    heartbeat: FiniteDuration = 1.second,
    deadAfter: FiniteDuration = 10.seconds,
    lease: FiniteDuration = 1.minute,
    backoff: Retry = WorkerConfig.defaultBackoff,
    keepCompleted: Boolean = false,
    retention: Option[Retention] = Some(Retention()),
    ackBatch: Int = 1000,
    releaseGrace: FiniteDuration = 10.seconds,
    stopWhenEmpty: Boolean = false,
    name: String = WorkerConfig.defaultName,
    maxResultBytes: Int = WorkerConfig.defaultMaxResultBytes
):

  /**
   * What is wrong with this config, each bad value named (its `backoff` and `retention` included); empty
   * when it is valid.
   */
  def errors: List[String] =
    Validation.check(queue != null && queue.nonEmpty, s"queue name must not be empty, was: '$queue'") ++
      Validation.check(claimBatch > 0, s"claimBatch must be > 0, was: $claimBatch") ++
      Validation.check(pollInterval > Duration.Zero, s"pollInterval must be > 0, was: $pollInterval") ++
      Validation.check(heartbeat > Duration.Zero, s"heartbeat must be > 0, was: $heartbeat") ++
      Validation.check(
        deadAfter > heartbeat,
        s"deadAfter must be longer than the heartbeat ($heartbeat), was: $deadAfter"
      ) ++
      Validation.check(
        lease > heartbeat * 2,
        s"lease must be longer than two heartbeats (${heartbeat * 2}), was: $lease"
      ) ++
      Validation.nested("backoff", backoff.errors) ++
      retention.toList.flatMap(r => Validation.nested("retention", r.errors)) ++
      Validation.check(ackBatch > 0, s"ackBatch must be > 0, was: $ackBatch") ++
      Validation.check(releaseGrace >= Duration.Zero, s"releaseGrace must be >= 0, was: $releaseGrace") ++
      Validation.check(
        maxResultBytes > 0 && maxResultBytes <= WorkerConfig.jsonbLimit,
        s"maxResultBytes must be between 1 and ${WorkerConfig.jsonbLimit} (what a jsonb value holds), was: $maxResultBytes"
      )

object WorkerConfig:

  /**
   * 64 KiB: a result is what the tasks that wait for it read (a count, an id, a small summary), kept with the
   * task's row; larger data belongs elsewhere, the result naming it.
   */
  val defaultMaxResultBytes: Int = 65536

  /** The largest `jsonb` value PostgreSQL stores, in bytes. */
  private[postgres] val jsonbLimit: Int = 0x0fffffff

  /** 1 s, doubling, at most 1 h, full jitter; every non-fatal error is retried. */
  val defaultBackoff: Retry =
    Retry.exponential(base = 1.second, maxAttempts = Int.MaxValue, maxDelay = 1.hour)

  /** `host:pid`. */
  def defaultName: String =
    val host =
      try java.net.InetAddress.getLocalHost.getHostName
      catch case _: Exception => "unknown-host"
    s"$host:${ProcessHandle.current().pid()}"
