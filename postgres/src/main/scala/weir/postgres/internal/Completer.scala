package weir.postgres.internal

import cats.effect.kernel.{Async, Ref, Resource}
import cats.effect.std.{Queue, Semaphore}
import cats.syntax.all.*
import doobie.*
import fs2.{Chunk, Stream}
import weir.Service
import weir.postgres.WorkerConfig

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
 * The writer is a [[weir.Service]] (`results`): each round writes one batch. Release of the resource writes
 * everything submitted before it, waiting at most `releaseGrace` for an unreachable database; then the
 * writer is cancelled, and once the release returns nothing more is written. The claims still unwritten
 * stay in [[Claims]], for the worker's last step to hand back.
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
   * A batch after the other, at once; a batch that fails is written again after 50 ms, doubling to 5 s
   * while it fails; a release waits at most `releaseGrace` for what was submitted before it.
   */
  def settings(config: WorkerConfig): Service.Settings =
    Service.Settings(
      name = "results",
      every = Duration.Zero,
      backoff = Service.Backoff(50.millis, 5.seconds),
      finishWithin = config.releaseGrace
    )

  /**
   * What the writer took from the queue and has not written yet (`slices`, each at most a batch, in
   * submission order), and whether the stop marker came after them. Read and written by the writer's
   * round only.
   */
  private final case class Pending(slices: List[Chunk[Finish]], stop: Boolean)

  /**
   * One round of the writer: the next batch of at most `batchSize` of what it holds, taking from the queue
   * first when it holds nothing. A batch whose write fails stays pending, so the service's next round (after
   * its backoff) writes it again: a result is never dropped while the worker runs.
   */
  private def writeNext[F[_]](
      queue: Queue[F, Option[Chunk[Finish]]],
      room: Semaphore[F],
      pending: Ref[F, Pending],
      batchSize: Int,
      write: Chunk[Finish] => F[Unit]
  )(using F: Async[F]): F[Service.Next] =
    // what one take gets: everything queued, up to the stop marker. Only the wait for the first is
    // cancelable: what is taken is pending before a cancellation can land
    val take: F[Pending] = F.uncancelable(poll =>
      poll(queue.take).flatMap {
        case None => F.pure(Pending(Nil, stop = true))
        case Some(first) =>
          queue.tryTakeN(None).flatMap { more =>
            val (items, rest) = more.span(_.isDefined)
            val slices = first :: items.flatten
            room.releaseN(slices.foldLeft(0L)(_ + _.size)).as(Pending(slices, stop = rest.nonEmpty))
          }
      }.flatTap(pending.set)
    )
    pending.get.flatMap(held => if held.slices.isEmpty && !held.stop then take else F.pure(held)).flatMap {
      case Pending(Nil, _) => F.pure(Service.Next.Done)
      case Pending(first :: more, stop) =>
        var size = first.size
        val (fits, later) = more.span { c =>
          size += c.size
          size <= batchSize
        }
        write(Chunk.concat(first :: fits)) *> pending.set(Pending(later, stop)).as(
          if later.isEmpty && stop then Service.Next.Done else Service.Next.After(Duration.Zero)
        )
    }

  /**
   * The worker's completer: batches of at most its `ackBatch`, written on `run`; `wake` wakes its own
   * claimer when a batch made tasks claimable; as its [[settings]] say otherwise. A streak of failed writes
   * is logged through `log` once when it begins and once when a batch commits again.
   */
  def resource[F[_]](run: Run[F], worker: WorkerContext, wake: F[Unit], log: WorkerLog[F])(using
      F: Async[F]
  ): Resource[F, Completer[F]] =
    import worker.{claims, counters, limited, sql}
    val queueName = worker.config.queue
    val keepCompleted = worker.config.keepCompleted
    val batchSize = worker.config.ackBatch
    val service = settings(worker.config)

    def write(batch: Chunk[Finish]): F[Unit] =
      // one pass over the batch: the statements' arrays, and whether any claim (or any completion) is keyed
      val completes = Array.newBuilder[Long]
      val recordTokens = Array.newBuilder[Long]
      val recordResults = Array.newBuilder[String]
      val failTokens = Array.newBuilder[Long]
      val failErrors = Array.newBuilder[String]
      val failDelays = Array.newBuilder[Long]
      val handBacks = Array.newBuilder[Long]
      val snoozeTokens = Array.newBuilder[Long]
      val snoozeDelays = Array.newBuilder[Long]
      var keyedCompletes = false
      var keyedRecords = false
      var keyed = false
      var claimableNow = false
      batch.foreach { f =>
        val isKeyed = claims.isKeyed(f.token)
        keyed ||= isKeyed
        f match
          case Finish.Complete(token) =>
            completes += token
            keyedCompletes ||= isKeyed
          case Finish.Record(token, result) =>
            recordTokens += token
            recordResults += result
            keyedRecords ||= isKeyed
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
      val recordedTokens = recordTokens.result()
      val failedTokens = failTokens.result()
      val handBackTokens = handBacks.result()
      val snoozedTokens = snoozeTokens.result()
      val tx =
        for
          completed <-
            if completeTokens.isEmpty then FC.pure(0)
            else sql.complete(completeTokens, keepCompleted, keyed = keyedCompletes)
          recorded <-
            if recordedTokens.isEmpty then FC.pure(0)
            else sql.record(recordedTokens, recordResults.result(), keyed = keyedRecords)
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
        yield (completed + recorded, failed, handedBack, snoozed)
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

    for
      queue <- Resource.eval(Queue.unbounded[F, Option[Chunk[Finish]]])
      room <- Resource.eval(Semaphore[F](batchSize * 4L))
      pending <- Resource.eval(F.ref(Pending(Nil, stop = false)))
      faults <- Resource.eval(log.faults(service.name, "writing results", counters))
      // the stop marker queues behind every finish submitted before release; the queue is unbounded (its room
      // is the semaphore's), so queueing the marker never waits on a writer that cannot write
      _ <- Service.finishing(service, faults, queue.offer(None))(
        writeNext(queue, room, pending, batchSize, write)
      )
    yield new Completer(queue, room, batchSize)
