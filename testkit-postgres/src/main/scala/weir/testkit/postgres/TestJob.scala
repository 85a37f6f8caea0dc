package weir.testkit.postgres

import cats.effect.kernel.Sync
import cats.syntax.all.*
import doobie.free.connection as FC
import weir.{Interruption, Validation}
import weir.postgres.{Job, NewTask}

import java.time.Instant
import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger}

/**
 * A [[weir.postgres.Job]] as a worker would hand it to a handler, built by a test: every field a handler
 * reads, by name, with defaults (`TestJob(Invoice(42), attempt = 3, headers = Map("tenant" -> "t1"))`), so
 * that a handler is tested without a database or a worker.
 *
 * `createdAt` unset is the time of `build` on `F`'s clock, as for a task enqueued just now. `build` checks the
 * fields as a worker's job has them ([[errors]]) and fails in `F` with one [[weir.InvalidSettings]] naming
 * every bad value.
 *
 * What the built job does where a claimed one reaches its database ([[TestJob.Built]]):
 *   - `completeIn` touches no database: it records that it ran and answers `true` the first time, as a claim
 *     that completes its task does; later runs answer `false` (the task is completed already, so the claim
 *     holds nothing), and so does every run after [[TestJob.Built.loseClaim]]. It is a `ConnectionIO`, so it
 *     runs inside whatever transaction the handler runs it in (a real one, on [[TestDatabase]], or none):
 *     it is counted when it runs, whether that transaction commits or not.
 *   - its `tryStart()` (asked by an engine before each attempt) is `None` until [[TestJob.Built.cancel]] or
 *     [[TestJob.Built.loseClaim]], then what a claimed job would answer.
 *   - [[TestJob.Built.cancel]] interrupts it as an operator's cancel interrupts a claimed job: an engine
 *     running it cancels the attempt, which ends interrupted with `cancelled: <reason>`.
 */
final case class TestJob[A](
    payload: A,
    id: Long = 1L,
    queue: String = "test",
    attempt: Int = 1,
    maxAttempts: Int = NewTask.defaultMaxAttempts,
    priority: Int = 0,
    orderingKey: Option[String] = None,
    createdAt: Option[Instant] = None,
    headers: Map[String, String] = Map.empty
):

  /**
   * What no worker's job could have, each bad value named; empty when valid. A job's attempt is between 1
   * and its `maxAttempts`, its id is positive, its queue named, and its priority, ordering key and headers
   * are what an enqueue accepts ([[weir.postgres.NewTask.errors]]).
   */
  def errors: List[String] =
    Validation.check(id > 0, s"id must be > 0, was: $id") ++
      Validation.check(queue != null && queue.nonEmpty, s"queue name must not be empty, was: '$queue'") ++
      Validation.check(attempt >= 1, s"attempt must be >= 1, was: $attempt") ++
      Validation.check(
        attempt <= maxAttempts || maxAttempts < 1,
        s"attempt must be <= maxAttempts ($maxAttempts), was: $attempt"
      ) ++
      NewTask(
        payload,
        priority = priority,
        maxAttempts = maxAttempts,
        orderingKey = orderingKey,
        headers = headers
      )
        .errors

  /** The job, and what its handler did with it; see [[TestJob]]. */
  def build[F[_]](using F: Sync[F]): F[TestJob.Built[F, A]] =
    Validation.raise[F]("TestJob", errors) *>
      createdAt.fold(F.realTimeInstant)(F.pure).flatMap(at => F.delay(TestJob.Built.of(this, at)))

object TestJob:

  /**
   * A job built by [[TestJob.build]], and what happened to it.
   *
   * Every method may be called from any fiber, concurrently with the handler.
   */
  final class Built[F[_], A] private (
      val job: Job[A],
      completed: AtomicInteger,
      lost: AtomicBoolean,
      interruption: Interruption
  )(using F: Sync[F]):

    /** How many runs of `job.completeIn` completed the task: 0 or 1 (see [[TestJob]]). */
    def completions: F[Int] = F.delay(completed.get)

    /**
     * Cancels the job as an operator's cancel (`TaskActions.cancel`) reaches a claimed one: an attempt an
     * engine runs now is interrupted, a later one refuses to start. True for the first request.
     */
    def cancel(reason: String): F[Boolean] = F.delay(interruption.request(reason))

    /**
     * Loses the claim, as when another worker rescued the task after taking this one for dead: from now on
     * `completeIn` completes nothing and answers `false`, and the job refuses to start.
     */
    def loseClaim: F[Unit] = F.delay(lost.set(true))

  private object Built:
    def of[F[_]: Sync, A](spec: TestJob[A], createdAt: Instant): Built[F, A] =
      val completed = new AtomicInteger
      val lost = new AtomicBoolean
      val interruption = new Interruption
      // the first run that finds the claim held completes the task, which ends the claim
      val completeIn = FC.delay(!lost.get && completed.compareAndSet(0, 1))
      val refusal = () => Option.when(lost.get)("another worker rescued this claim (TestJob.Built.loseClaim)")
      val job = Job.detached(
        spec.id,
        spec.queue,
        spec.payload,
        spec.attempt,
        spec.maxAttempts,
        spec.priority,
        spec.orderingKey,
        createdAt,
        spec.headers,
        completeIn,
        refusal,
        interruption
      )
      new Built[F, A](job, completed, lost, interruption)
