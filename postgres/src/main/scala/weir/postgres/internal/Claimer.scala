package weir.postgres.internal

import cats.effect.kernel.{Async, Deferred}
import cats.effect.std.Queue
import cats.syntax.all.*
import fs2.{Chunk, Stream}
import weir.postgres.{Job, PayloadCodec}

import scala.concurrent.duration.*

/**
 * Claims a queue's tasks in batches and emits them, decoded, as one producer of the worker's pipeline.
 *
 * After a full batch it claims again at once (the pipeline's buffer holds it back when the workers are
 * busy); after a short one it waits for a wake-up or the poll interval, unless the worker's session answers
 * a notification with a claim of its own first, whose rows it then takes (see [[IdleGate]]).
 * A claim is uncancelable: once the database has given tasks to this worker they are recorded in
 * [[Claims]] before anything else happens, so a drain can hand them back.
 *
 * The queue's controls (paused, a limit on running tasks, a rate: see [[Sql.claim]]) are the claim's own: a
 * claim they hold back is short, and the claimer waits as after any short claim, at most until the rate's
 * next token when that is what held it back. Whether the queue has a limit on running tasks is recorded in
 * `limited` at every claim, for the completer: a finished task of such a queue frees room for a claimer
 * that may be waiting in another process.
 *
 * A payload (or headers) that does not decode is sent to dead with its decode error through the completer
 * and never emitted. Database errors are counted and retried with backoff (up to the poll interval), and
 * logged through `log` once per streak (`faults`): the stream itself never fails. A change of the queue's
 * pause, as the claims see it, is logged once (see [[Claimer.pausedBy]]). It ends when `stop` is completed (at once, even while it waits), or, with
 * `stopWhenEmpty`, at the first empty claim after which the queue has no unfinished task left.
 */
private[postgres] final class Claimer[F[_], A](
    run: Run[F],
    worker: WorkerContext,
    completer: Completer[F],
    wake: Queue[F, Unit],
    gate: IdleGate[F],
    stop: Deferred[F, Unit],
    log: WorkerLog[F],
    faults: Faults[F]
)(using F: Async[F], codec: PayloadCodec[A]):
  import Claimer.Accepted
  import worker.{claims, config, counters, limited, liveness, sql}

  private val queueLog = log.logger("queue")

  // how every job of this worker checks and completes its claim
  private val claimed = new Job.Claimed(sql, config.keepCompleted, liveness)

  // whether the claims last saw the queue paused: written by this claimer's one fiber only (a claim of the
  // session reaches it through `accept`, on that fiber too)
  private val paused = new java.util.concurrent.atomic.AtomicBoolean(false)

  def stream: Stream[F, Job[A]] = loop(Duration.Zero)

  private def loop(errorWait: FiniteDuration): Stream[F, Job[A]] =
    Stream.eval(stop.tryGet).flatMap {
      case Some(_) => Stream.empty
      case None => claimAndGoOn(errorWait)
    }

  private def claimAndGoOn(errorWait: FiniteDuration): Stream[F, Job[A]] =
    Stream.eval(claimOnce).flatMap(goOn(_, errorWait))

  private def goOn(claimed: Either[Throwable, Accepted[A]], errorWait: FiniteDuration): Stream[F, Job[A]] =
    claimed match
      case Right(Accepted(jobs, got, heldBack)) =>
        // held back by the rate: the next claim can get a task once its next token is due
        val wait = heldBack.filter(_ >= 0).fold(config.pollInterval)(_.millis.min(config.pollInterval))
        val next =
          if got >= config.claimBatch then loop(Duration.Zero)
          else if got > 0 || heldBack.isDefined then afterIdle(wait)
          else if config.stopWhenEmpty then
            Stream.eval(run(sql.unfinished(config.queue)).attempt).flatMap {
              case Right(0L) => Stream.empty
              case _ => afterIdle(wait)
            }
          else afterIdle(wait)
        Stream.chunk(jobs) ++ next
      case Left(e: java.sql.SQLException) if e.getSQLState == Claimer.uniqueViolation =>
        // another worker's claim raced this one for the same ordering key and the database refused the
        // second running task of that key: nothing was claimed, claim again
        loop(errorWait)
      case Left(e) =>
        val wait = if errorWait == Duration.Zero then 50.millis else (errorWait * 2).min(config.pollInterval)
        Stream.exec(faults.failed(e) *> F.race(stop.get, F.sleep(wait)).void) ++ loop(wait)

  /** Waits at most `wait`, then claims, or goes on with the rows the session claimed meanwhile. */
  private def afterIdle(wait: FiniteDuration): Stream[F, Job[A]] =
    Stream.eval(idle(wait)).flatMap {
      case None => loop(Duration.Zero)
      case Some(claim) => Stream.eval(accept(claim).map(Right(_))).flatMap(goOn(_, Duration.Zero))
    }

  /**
   * Waits for a wake-up, `wait` or a stop, whichever comes first, unless the session claims first on a
   * notification: then its rows, which this claimer must take even if it was stopping (a stop makes them
   * claims the drain hands back).
   */
  private def idle(wait: FiniteDuration): F[Option[Sql.Claim]] =
    Deferred[F, Sql.Claim].flatMap { session =>
      // Left(true): a wake-up was taken; Left(false): the wait ran out
      val woken = F.timeoutTo(F.race(wake.take.as(true), session.get), wait, F.pure(Left(false)))
      // a claimer cancelled while it waits (its stream torn down) takes the turn back, so that the session
      // does not claim rows no one would take. Masked but for the wait itself: a cancellation between taking
      // the turn and waiting would leave the turn with the session
      F.uncancelable(poll =>
        gate.waiting(session) *>
          F.onCancel(poll(F.race(stop.get, woken)), gate.resume.void).flatMap {
            case Right(Right(rows)) => gate.hasRows.as(Some(rows))
            case ended =>
              val tookWake = ended match
                case Right(Left(true)) => true
                case _ => false
              gate.resume.flatMap {
                case None => F.pure(None)
                case Some(rows) =>
                  // the session's claim is under way and its rows are this period's. A wake-up taken meanwhile
                  // may announce tasks that claim did not see (a notification the session received after
                  // beginning it, a finish of this process): it is offered again, so that the next idle
                  // period claims at once instead of waiting for the poll
                  rows.get.flatTap(_ => gate.hasRows *> wake.tryOffer(()).void.whenA(tookWake)).map(Some(_))
              }
          }
      )
    }

  /** One claim, accepted. */
  private def claimOnce: F[Either[Throwable, Accepted[A]]] =
    // a worker whose heartbeat is late would only claim tasks it must refuse to start: it waits for the next
    // beat (two per period), not for its poll, which may be long, nor for a wake-up, which may not come
    F.delay(liveness.stale).flatMap(stale =>
      if stale then F.pure(Right(Accepted(Chunk.empty, 0, Some((config.heartbeat / 2).toMillis.max(1L)))))
      else claimNow
    )

  private def claimNow: F[Either[Throwable, Accepted[A]]] =
    F.uncancelable { _ =>
      // one statement, committed with its own round trip: an idle worker's claim is most of its latency
      run.single(worker.claim).attempt.flatMap {
        case Left(e) => F.pure(Left(e))
        // only a claim that reached the database ends a streak of errors (not a stale worker's pass)
        case Right(claim) => faults.succeeded *> accept(claim).map(Right(_))
      }
    }

  /**
   * Claimed rows, recorded in [[Claims]] before anything else happens (so that a drain can hand them back),
   * then decoded; those that do not decode go to dead. Uncancelable.
   */
  private def accept(claim: Sql.Claim): F[Accepted[A]] =
    val rows = claim.rows
    F.uncancelable { _ =>
      F.delay {
        limited.set(claim.control.exists(_.limited))
        if claim.control.exists(_.heldBackMillis.isDefined) then counters.heldBack.incrementAndGet(): Unit
        val held = rows.map(r => claims.add(r.token, r.orderingKey.isDefined, claimed, claim.sentAt))
        counters.claimed.addAndGet(rows.size.toLong)
        val jobs = Vector.newBuilder[Job[A]]
        val undecodable = Vector.newBuilder[Finish]
        rows.lazyZip(held).foreach { (r, claim) =>
          val decoded =
            for
              payload <-
                codec.decode(r.payload).left.map(e => s"payload does not decode: ${Errors.describe(e)}")
              headers <-
                HeaderCodec.decode(r.headers).left.map(e => s"headers do not decode: ${Errors.describe(e)}")
            yield (payload, headers)
          decoded match
            case Right((payload, headers)) =>
              jobs += new Job(
                r.id,
                config.queue,
                payload,
                r.attempt,
                r.maxAttempts,
                r.priority,
                r.orderingKey,
                r.createdAt,
                headers,
                r.token,
                claim
              )
            case Left(error) =>
              // never handed to the pipeline: its end is the claimer's, and it never started
              claim.handBack(): Unit
              undecodable += Finish.Fail(r.token, error, -1L)
        }
        (jobs.result(), undecodable.result(), rows.size)
      }.flatMap { (jobs, undecodable, got) =>
        pauseSeen(claim) *> undecodable.traverse_(completer.submit)
          .as(Accepted(Chunk.from(jobs), got, claim.control.flatMap(_.heldBackMillis)))
      }
    }

  /** Logs a change of the queue's pause that `claim` shows, once per change. */
  private def pauseSeen(claim: Sql.Claim): F[Unit] =
    Claimer.pausedBy(claim).fold(F.unit)(now =>
      F.delay(paused.getAndSet(now) != now).flatMap(changed =>
        queueLog.info(log.context)(
          if now then s"${log.prefix}: the queue is paused: no task of it is claimed until it is resumed"
          else s"${log.prefix}: the queue is resumed"
        ).whenA(changed)
      )
    )

private[postgres] object Claimer:

  /**
   * Whether `claim` shows its queue paused: `Some(true)` when its controls held it back with nothing
   * claimed and the queue has no limit on running tasks (only a pause holds a claim back so then);
   * `Some(false)` when it claimed tasks, or its controls did not hold it back, or only its rate did; `None`
   * when it cannot tell, held back with nothing claimed in a queue with a limit (paused, or at its limit).
   */
  def pausedBy(claim: Sql.Claim): Option[Boolean] =
    claim.control match
      case Some(Sql.Control(limited, Some(-1L))) if claim.rows.isEmpty => if limited then None else Some(true)
      case _ => Some(false)

  /** SQLSTATE of a unique violation: here, a second running task of one ordering key. */
  val uniqueViolation: String = "23505"

  /**
   * A claim, accepted: its decoded jobs, how many rows the database gave (decoding failures included), and
   * how long the queue's controls held it back (see [[Sql.Control]]).
   */
  final case class Accepted[A](jobs: Chunk[Job[A]], got: Int, heldBackMillis: Option[Long])
