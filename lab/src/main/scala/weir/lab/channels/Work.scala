package weir.lab.channels

import cats.effect.IO
import weir.lab.Tally

import scala.concurrent.duration.*

/**
 * The channel experiment's tasks: task `i` waits `delays(i)` (seed 001's simulated I/O) and is counted
 * by `tally` with the time it finished, relative to `start` (on the effect's clock, so virtual under
 * `TestControl`).
 */
final class Work private (val delays: Vector[FiniteDuration], val tally: Tally, start: FiniteDuration):

  def size: Int = delays.size

  /** Task `i` as an effect: an asynchronous sleep (`IO.sleep`), no thread held while it waits. */
  def task(i: Int): IO[Unit] = tally.beginIO *> IO.sleep(delays(i)) *> tally.endIO(i, start)

  /** Task `i` blocking the calling platform thread for its delay (`Thread.sleep`); real clock only. */
  def blockingTask(i: Int): Unit =
    tally.begin()
    Thread.sleep(java.time.Duration.ofNanos(delays(i).toNanos))
    tally.endAt(i, System.nanoTime() - start.toNanos)

object Work:
  /** Tasks with these delays, timed from now. */
  def apply(delays: Vector[FiniteDuration]): IO[Work] =
    IO.monotonic.map(now => new Work(delays, new Tally(delays.size), now))
