package weir.internal

import cats.effect.kernel.{Ref, Sync}
import cats.syntax.all.*
import weir.{Latency, TaskOutcome}

import java.util.concurrent.atomic.LongAdder
import scala.concurrent.duration.*

/**
 * The accounts of one run: counters for every transition a task makes, the failed and unstarted tasks
 * themselves, and the task latencies. Updating a counter is a `LongAdder` increment and recording a
 * latency a plain write to the recording thread's own histogram ([[LatencyRecorder]]), so the ledger is
 * always on.
 *
 * Invariant at the end of a run: `received == succeeded + failed + notStarted`.
 */
private[weir] final class Ledger[F[_], A] private (
    failures: Ref[F, Vector[TaskOutcome.Failed[A, Nothing]]],
    unstarted: Ref[F, Vector[A]]
)(using F: Sync[F]):
  private val receivedN = new LongAdder
  private val startedN = new LongAdder
  private val succeededN = new LongAdder
  private val failedN = new LongAdder
  private val notStartedN = new LongAdder
  private val retriedN = new LongAdder
  private val timedOutN = new LongAdder
  private val latencies = new LatencyRecorder

  def received(n: Int): F[Unit] = F.delay(receivedNow(n))

  /** [[received]] as a plain call, for the producer's fast path (inside an effect). */
  def receivedNow(n: Int): Unit = receivedN.add(n.toLong)
  def started: F[Unit] = F.delay(startedN.increment())

  /** [[started]] as a plain call, for the worker's fast path (inside an effect). */
  def startedNow(): Unit = startedN.increment()

  /** [[succeeded]] as a plain call, for the worker's fast path (inside an effect). */
  def succeededNow(latencyNanos: Long): Unit =
    succeededN.increment()
    latencies.record(latencyNanos)
  def retried: F[Unit] = F.delay(retriedN.increment())
  def timedOut: F[Unit] = F.delay(timedOutN.increment())

  def succeeded(latency: FiniteDuration): F[Unit] = F.delay(succeededNow(latency.toNanos))

  def failed(failure: TaskOutcome.Failed[A, Nothing], latency: Option[FiniteDuration]): F[Unit] =
    F.delay {
      failedN.increment()
      latency.foreach(l => latencies.record(l.toNanos))
    } *> failures.update(_ :+ failure)

  def notStarted(tasks: Iterable[A]): F[Unit] =
    if tasks.isEmpty then F.unit
    else F.delay(notStartedN.add(tasks.size.toLong)) *> unstarted.update(_ ++ tasks)

  def counts: F[Ledger.Counts] =
    F.delay(
      Ledger.Counts(
        received = receivedN.sum,
        started = startedN.sum,
        succeeded = succeededN.sum,
        failed = failedN.sum,
        notStarted = notStartedN.sum,
        retried = retriedN.sum,
        timedOut = timedOutN.sum
      )
    )

  def failedTasks: F[Vector[TaskOutcome.Failed[A, Nothing]]] = failures.get
  def unstartedTasks: F[Vector[A]] = unstarted.get

  /** The latency summary; read it once the run's tasks are all recorded (see [[LatencyRecorder]]). */
  def latency: F[Latency] = F.delay(latencies.summary)

private[weir] object Ledger:
  final case class Counts(
      received: Long,
      started: Long,
      succeeded: Long,
      failed: Long,
      notStarted: Long,
      retried: Long,
      timedOut: Long
  ):
    /** Every failed task had started, so this is what is running now. */
    def inFlight: Long = started - succeeded - failed

  def apply[F[_]: Sync, A]: F[Ledger[F, A]] =
    (Ref.of[F, Vector[TaskOutcome.Failed[A, Nothing]]](Vector.empty), Ref.of[F, Vector[A]](Vector.empty))
      .mapN(new Ledger(_, _))
