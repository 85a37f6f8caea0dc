package weir.postgres.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import doobie.FC

/** The last step of a worker's release (see `DurableWorker`). */
private[postgres] object LastStep:

  /**
   * A worker's last step: hands back every claim it still holds and removes its row. It runs after the
   * completer has stopped, so no finish of this process is pending any more and none can commit after it
   * (a finish whose commit was already under way has locked its rows, and every statement here is guarded
   * by the claim's token or state): nothing written here overtakes a finish of the same claim.
   *
   * What is still held either never started or ran without its result being written (the database was
   * unreachable for the whole shutdown grace). A task that may have started goes back counted, as a
   * failed attempt, so that a task that always outlasts its results cannot run forever; then every other
   * claim of this worker, none of which started, goes back uncounted. If this fails too, the claims keep
   * their lease and are rescued, counted, once the worker's heartbeat is older than `deadAfter`.
   */
  def handBack[F[_]](
      run: Run[F],
      sql: Sql,
      queue: String,
      owner: Long,
      claims: Claims,
      counters: Counters
  )(using
      F: Async[F]
  ): F[Unit] =
    F.delay(claims.maybeStarted).flatMap { ran =>
      val failRan =
        if ran.isEmpty then FC.pure((0, 0, 0))
        else sql.fail(ran, Array.fill(ran.length)(unwritten), Array.fill(ran.length)(0L))
      run(for
        failed <- failRan
        handedBack <- sql.handBackAll(queue, owner)
        _ <- sql.deregister(owner)
        // what goes back is claimable at once: other workers need not wait for their poll
        _ <- if failed._1 + handedBack._1 > 0 then sql.wakeQueue(queue) else FC.unit
      yield (failed, handedBack))
        .flatMap { case ((retried, dead, cancelledFailing), (handedBack, cancelledUnstarted)) =>
          F.delay {
            counters.retried.addAndGet(retried.toLong)
            counters.dead.addAndGet(dead.toLong)
            counters.cancelled.addAndGet((cancelledFailing + cancelledUnstarted).toLong)
            counters.handedBack.addAndGet(handedBack.toLong)
          }.void
        }
    }

  val unwritten = "the worker stopped before the result of this attempt was written"
