package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.effect.std.{Queue, Semaphore}
import cats.syntax.all.*
import doobie.*
import fs2.{Chunk, Stream}

import scala.concurrent.duration.*

/**
 * Writes finished claims to the database in batches: whatever accumulated while the previous batch was
 * being written goes in the next one (at most `batchSize`), so a lone completion is written at once and a
 * busy worker writes hundreds per transaction.
 *
 * A batch whose transaction fails is written again, with backoff, until it commits: a result is never
 * dropped while the worker runs. Every statement is guarded by the claim, so writing a batch twice (a
 * commit whose answer was lost) changes nothing the second time.
 *
 * A task of a queue with a limit on running tasks (`limited`, as its last claim said) that finishes frees
 * room: the batch wakes the queue's claimers, here and in other processes, which may be waiting for it.
 *
 * A finish is submitted once its claim's end is known ([[weir.Tracked.done]], or the claimer's hand-back),
 * so that the heartbeat never takes its row, gone because it committed, for a rescue; once it has
 * committed, its claim is finished and forgotten ([[Claims.finished]]).
 *
 * Release of the resource writes everything submitted before it, waiting at most `stopWithin` for an
 * unreachable database; then the writer is stopped, and once the release returns nothing more is written.
 * The claims still unwritten stay in [[Claims]], for the worker's last step to hand back.
 */
private[postgres] final class Completer[F[_]] private (
    queue: Queue[F, Option[Chunk[Finish]]],
    room: Semaphore[F],
    batchSize: Int
)(using F: Async[F]):

  /**
   * Queues a finish, whose claim's end is known; waits while `4 × batchSize` are queued. Cancelable while
   * it waits.
   */
  def submit(finish: Finish): F[Unit] = submitAll(Chunk.singleton(finish))

  /**
   * Queues finishes as [[submit]] does each, in slices of at most a batch, each queued as one: a queue
   * operation per slice, not per finish. Cancelable while it waits for room; the slices queued before a
   * cancellation stay queued.
   */
  def submitAll(finishes: Chunk[Finish]): F[Unit] =
    if finishes.size <= batchSize then offer(finishes)
    else Stream.chunk(finishes).chunkLimit(batchSize).foreach(offer).compile.drain

  // the room is taken before the slice is queued and given back when the writer takes it: queued finishes
  // never exceed the semaphore's permits
  private def offer(slice: Chunk[Finish]): F[Unit] =
    room.acquireN(slice.size.toLong) *> queue.offer(Some(slice))

private[postgres] object Completer:

  /**
   * The worker's completer: batches of at most its `ackBatch`, written on `run`; `wake` wakes its own
   * claimer when a batch made tasks claimable; release waits at most its `releaseGrace`. A streak of
   * failed writes is logged through `log` once when it begins and once when a batch commits again.
   */
  def resource[F[_]](run: Run[F], worker: WorkerContext, wake: F[Unit], log: WorkerLog[F])(using
      F: Async[F]
  ): Resource[F, Completer[F]] =
    import worker.{claims, counters, limited, sql}
    val queueName = worker.config.queue
    val keepCompleted = worker.config.keepCompleted
    val batchSize = worker.config.ackBatch
    val stopWithin = worker.config.releaseGrace

    def write(batch: Chunk[Finish]): F[Unit] =
      // one pass over the batch: the statements' arrays, and whether any claim (or any completion) is keyed
      val completes = Array.newBuilder[Long]
      val failTokens = Array.newBuilder[Long]
      val failErrors = Array.newBuilder[String]
      val failDelays = Array.newBuilder[Long]
      val handBacks = Array.newBuilder[Long]
      val snoozeTokens = Array.newBuilder[Long]
      val snoozeDelays = Array.newBuilder[Long]
      var keyedCompletes = false
      var keyed = false
      var claimableNow = false
      batch.foreach { f =>
        val isKeyed = claims.isKeyed(f.token)
        keyed ||= isKeyed
        f match
          case Finish.Complete(token) =>
            completes += token
            keyedCompletes ||= isKeyed
          case Finish.Fail(token, error, delayMillis) =>
            claimableNow ||= delayMillis == 0L
            failTokens += token
            failErrors += error
            failDelays += delayMillis
          case Finish.HandBack(token) =>
            claimableNow = true
            handBacks += token
          case Finish.Snooze(token, delayMillis) =>
            claimableNow ||= delayMillis == 0L
            snoozeTokens += token
            snoozeDelays += delayMillis
      }
      // a finished keyed task may have made its key's next task claimable, and a task handed back or to be
      // retried at once is claimable now: wake this queue's claimers, here and in other processes, rather
      // than leave those tasks to the next poll
      val wakeUp = keyed || claimableNow || limited.get
      val completeTokens = completes.result()
      val failedTokens = failTokens.result()
      val handBackTokens = handBacks.result()
      val snoozedTokens = snoozeTokens.result()
      val tx =
        for
          completed <-
            if completeTokens.isEmpty then FC.pure(0)
            else sql.complete(completeTokens, keepCompleted, keyed = keyedCompletes)
          failed <-
            if failedTokens.isEmpty then FC.pure((0, 0, 0))
            else sql.fail(failedTokens, failErrors.result(), failDelays.result())
          handedBack <-
            if handBackTokens.isEmpty then FC.pure((0, 0))
            else sql.handBack(handBackTokens)
          snoozed <-
            if snoozedTokens.isEmpty then FC.pure((0, 0))
            else sql.snooze(snoozedTokens, snoozeDelays.result())
          _ <- if wakeUp then sql.wakeQueue(queueName) else FC.unit
        yield (completed, failed, handedBack, snoozed)
      run(tx).flatMap {
        case (
              completed,
              (retried, dead, cancelledFailing),
              (handedBack, cancelledUnstarted),
              (snoozed, cancelledSnoozing)
            ) =>
          F.delay {
            counters.completed.addAndGet(completed.toLong)
            counters.retried.addAndGet(retried.toLong)
            counters.dead.addAndGet(dead.toLong)
            counters.cancelled.addAndGet((cancelledFailing + cancelledUnstarted + cancelledSnoozing).toLong)
            counters.handedBack.addAndGet(handedBack.toLong)
            counters.snoozed.addAndGet(snoozed.toLong)
            batch.foreach(f => claims.finished(f.token): Unit)
          } *> wake.whenA(wakeUp)
      }

    def writeUntilCommitted(faults: Faults[F])(batch: Chunk[Finish], wait: FiniteDuration): F[Unit] =
      write(batch).redeemWith(
        e =>
          faults.failed(e) *> F.sleep(wait) *> writeUntilCommitted(faults)(batch, (wait * 2).min(5.seconds)),
        _ => faults.succeeded
      )

    /** Writes `slices` (each at most a batch) in batches of at most `batchSize`, in order. */
    def writeAll(faults: Faults[F])(slices: List[Chunk[Finish]]): F[Unit] =
      slices match
        case Nil => F.unit
        case first :: more =>
          var size = first.size
          val (fits, later) = more.span { c =>
            size += c.size
            size <= batchSize
          }
          writeUntilCommitted(faults)(Chunk.concat(first :: fits), 50.millis) *> writeAll(faults)(later)

    def loop(queue: Queue[F, Option[Chunk[Finish]]], room: Semaphore[F], faults: Faults[F]): F[Unit] =
      queue.take.flatMap {
        case None => F.unit
        case Some(first) =>
          queue.tryTakeN(None).flatMap { more =>
            val (items, rest) = more.span(_.isDefined)
            val slices = first :: items.flatten
            room.releaseN(slices.foldLeft(0L)(_ + _.size)) *> writeAll(faults)(slices) *>
              (if rest.isEmpty then loop(queue, room, faults) else F.unit)
          }
      }

    for
      queue <- Resource.eval(Queue.unbounded[F, Option[Chunk[Finish]]])
      room <- Resource.eval(Semaphore[F](batchSize * 4L))
      faults <- Resource.eval(log.faults("results", "writing results", counters))
      _ <- Resource.make(F.start(loop(queue, room, faults))) { fiber =>
        // the stop marker queues behind every finish submitted before release; the queue is unbounded (its
        // room is the semaphore's), so queueing the marker never waits on a writer that cannot write
        queue.offer(None) *> F.timeoutTo(fiber.join.void, stopWithin, fiber.cancel)
      }
    yield new Completer(queue, room, batchSize)
