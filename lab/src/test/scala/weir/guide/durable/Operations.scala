package weir.guide.durable

// docs/durable.md, "Operations": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import weir.postgres.*

import scala.concurrent.duration.*

final class Operations(db: Database[IO]):
  val admin: TaskAdmin[IO] = TaskAdmin(db)

  // per queue, the count in each state
  val stats: IO[Vector[QueueStats]] = admin.overview.stats
  // per queue, tasks available, scheduled, waiting behind their key, running, dead and cancelled, from the
  // indexes
  val depths: IO[Vector[QueueDepth]] = admin.overview.depths()
  // Cancelled (it was waiting), Requested (it runs: its worker interrupts it), Finished(state), NotFound
  def cancel(id: Long, reason: String): IO[Cancel] = admin.tasks.cancel(id, reason)
  // a dead or cancelled task back to run now, with fresh attempts and its errors kept: Retried, Refused(state)
  // (another state), KeyHeld (an unfinished task holds its unique key), NotFound
  def retry(id: Long): IO[Retry] = admin.tasks.retry(id)
  // deletes a dead or cancelled task: Discarded, Refused(state), NotFound
  def discard(id: Long): IO[Discard] = admin.tasks.discard(id)
  // retry, discard or cancel each of ids, in one transaction, in their order: each one's outcome as above
  // (what the console's batch actions use)
  def retryMany(ids: Vector[Long]): IO[Vector[Retry]] = admin.tasks.retryMany(ids)
  def discardMany(ids: Vector[Long]): IO[Vector[Discard]] = admin.tasks.discardMany(ids)
  def cancelMany(ids: Vector[Long], reason: String): IO[Vector[Cancel]] = admin.tasks.cancelMany(ids, reason)
  // rows deleted, 1,000 per transaction
  val prune: IO[Long] = admin.prune(7.days, Set(FinishedState.Completed))
  // name, queue, timing, missed, lastTick, nextTick, ticks enqueued (see Periodic tasks)
  val schedules: IO[Vector[ScheduleInfo]] = admin.overview.schedules
  // id, name, startedAt, heartbeatAt, running tasks, and sessionHeld: its session holds its lock now, so its
  // death is seen within a heartbeat (false: notifications off, or its session is reconnecting; then
  // deadAfter decides)
  val workers: IO[Vector[WorkerInfo]] = admin.overview.workers
