package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import doobie.*

import scala.concurrent.duration.*

/** How a claim ends, as the completer writes it. */
private[postgres] enum Finish:
  /** The handler succeeded. */
  case Complete(token: Long)

  /** The attempt failed: retry after `delayMillis`, or dead at once when it is negative. */
  case Fail(token: Long, error: String, delayMillis: Long)

  /** The task never started: hand it back uncounted. */
  case Release(token: Long)

  /** The claim this finishes. */
  def token: Long

/**
 * Writes finished claims to the database in batches: whatever accumulated while the previous batch was
 * being written goes in the next one (at most `batchSize`), so a lone completion is written at once and a
 * busy worker writes hundreds per transaction.
 *
 * A batch whose transaction fails is written again, with backoff, until it commits: a result is never
 * dropped while the worker runs. Every statement is guarded by the claim, so writing a batch twice (a
 * commit whose answer was lost) changes nothing the second time.
 *
 * Release of the resource writes everything submitted before it, waiting at most `stopWithin` for an
 * unreachable database; then the writer is stopped, and once the release returns nothing more is written.
 * The claims still unwritten stay in [[Claims]], for the worker's last step to hand back.
 */
private[postgres] final class Completer[F[_]] private (queue: Queue[F, Option[Finish]], claims: Claims)(using
    F: Async[F]
):

  /**
   * Queues a finish; waits while `4 × batchSize` are queued. Cancelable while it waits. A release also
   * marks its claim as not started, so that the worker's last step hands it back uncounted should the
   * release itself never be written.
   */
  def submit(finish: Finish): F[Unit] = finish match
    case Finish.Release(token) => F.delay(claims.notStarted(token)) *> queue.offer(Some(finish))
    case _ => queue.offer(Some(finish))

private[postgres] object Completer:

  def resource[F[_]](
      run: Run[F],
      sql: Sql,
      queue: String,
      keepCompleted: Boolean,
      batchSize: Int,
      claims: Claims,
      counters: Counters,
      stopWithin: FiniteDuration,
      wake: F[Unit]
  )(using F: Async[F]): Resource[F, Completer[F]] =

    def write(batch: List[Finish]): F[Unit] =
      val completes = batch.collect { case c: Finish.Complete => c }
      val fails = batch.collect { case f: Finish.Fail => f }
      val releases = batch.collect { case r: Finish.Release => r }
      val keyed = batch.exists(f => claims.isKeyed(f.token))
      // a finished keyed task may have made its key's next task claimable, and a task handed back or to be
      // retried at once is claimable now: wake this queue's claimers, here and in other processes, rather
      // than leave those tasks to the next poll
      val wakeUp = keyed || releases.nonEmpty || fails.exists(_.delayMillis == 0L)
      val tx =
        for
          completed <-
            if completes.isEmpty then FC.pure(0)
            else
              sql.complete(
                completes.map(_.token).toArray,
                keepCompleted,
                keyed = completes.exists(c => claims.isKeyed(c.token))
              )
          failed <-
            if fails.isEmpty then FC.pure((0, 0))
            else
              sql.fail(
                fails.map(_.token).toArray,
                fails.map(_.error).toArray,
                fails.map(_.delayMillis).toArray
              )
          released <-
            if releases.isEmpty then FC.pure(0)
            else sql.release(releases.map(_.token).toArray)
          _ <- if wakeUp then sql.wakeQueue(queue) else FC.unit
        yield (completed, failed, released)
      run(tx).flatMap { case (completed, (retried, dead), released) =>
        F.delay {
          counters.completed.addAndGet(completed.toLong)
          counters.retried.addAndGet(retried.toLong)
          counters.dead.addAndGet(dead.toLong)
          counters.released.addAndGet(released.toLong)
          batch.foreach(f => claims.remove(f.token))
        } *> wake.whenA(wakeUp)
      }

    def writeUntilCommitted(batch: List[Finish], wait: FiniteDuration): F[Unit] =
      write(batch).handleErrorWith { e =>
        F.delay(counters.error(e)) *> F.sleep(wait) *> writeUntilCommitted(batch, (wait * 2).min(5.seconds))
      }

    def loop(queue: Queue[F, Option[Finish]]): F[Unit] =
      queue.take.flatMap {
        case None => F.unit
        case Some(first) =>
          // tryTakeN refuses a maximum of zero
          val more = if batchSize > 1 then queue.tryTakeN(Some(batchSize - 1)) else F.pure(Nil)
          more.flatMap { more =>
            val (items, rest) = more.span(_.isDefined)
            writeUntilCommitted(first :: items.flatten, 50.millis) *>
              (if rest.isEmpty then loop(queue) else F.unit)
          }
      }

    for
      queue <- Resource.eval(Queue.bounded[F, Option[Finish]](batchSize * 4))
      _ <- Resource.make(F.start(loop(queue))) { fiber =>
        // the stop marker queues behind every finish submitted before release; queueing it may itself wait
        // on a full queue whose writer cannot write, so the deadline covers both
        F.timeoutTo(queue.offer(None) *> fiber.join.void, stopWithin, fiber.cancel)
      }
    yield new Completer(queue, claims)
