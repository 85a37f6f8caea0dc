package weir.internal

import scala.concurrent.duration.FiniteDuration

/**
 * What a worker starts from other than a take ([[WorkerPool.Slot]]): what a cancelled worker left the worker
 * that takes its place, or, for a standby ([[DeadlineTimer]]), the worker it watches. Made only when a
 * worker is replaced or a standby starts, never per task.
 */
private[weir] sealed trait Resume[F[_], A]

private[weir] object Resume:

  /** Go on after `entry`, which the cancelled worker recorded: its key's next task, then any. */
  final case class After[F[_], A](entry: Entry[A]) extends Resume[F, A]

  /**
   * Attempt `tries` of `entry`, its first having started at `start` (monotonic nanoseconds), overran its
   * deadline (`limit` after its own start): go on from its end, a [[weir.TaskTimedOut]].
   */
  final case class TimedOut[F[_], A](entry: Entry[A], tries: Int, start: Long, limit: FiniteDuration)
      extends Resume[F, A]

  /** A standby: watch `deadline`, that of the worker in `of`, and take its place when an attempt overruns. */
  final case class Watch[F[_], A](deadline: UnsafeDeadline, of: WorkerPool.Slot[F, Resume[F, A]])
      extends Resume[F, A]
