package weir.lab

import cats.effect.IO

import java.util.concurrent.atomic.{AtomicInteger, AtomicIntegerArray, AtomicLong, AtomicLongArray}

/**
 * Counts the tasks of one run of a `./weir lab` experiment: how often each task finished (exactly once
 * for a correct approach), how many ran at once at most, and when each finished. Lock-free (a few atomic
 * operations per task), usable from fibers and plain threads alike.
 */
final class Tally(val tasks: Int):
  require(tasks >= 0, s"tasks must be >= 0, was: $tasks")
  private val t0 = new AtomicLong(System.nanoTime())
  private val times = new AtomicIntegerArray(tasks)
  private val endedAt = new AtomicLongArray(tasks)
  private val running = new AtomicInteger(0)
  private val peak = new AtomicInteger(0)

  /** Marks time zero (real clock) for [[finishedAt]]. */
  def restart(): Unit = t0.set(System.nanoTime())

  /** A task starts its work. */
  def begin(): Unit =
    val now = running.incrementAndGet()
    val _ = peak.accumulateAndGet(now, math.max)

  /** Task `task` ends its work, at `nanos` after time zero. */
  def endAt(task: Int, nanos: Long): Unit =
    val _ = running.decrementAndGet()
    endedAt.set(task, nanos)
    val _ = times.incrementAndGet(task)

  /** Task `task` ends its work now (real clock). */
  def end(task: Int): Unit = endAt(task, System.nanoTime() - t0.get)

  /** [[begin]] as an effect. */
  def beginIO: IO[Unit] = IO(begin())

  /** [[endAt]] with the effect's clock (virtual under `TestControl`), relative to `start`. */
  def endIO(task: Int, start: scala.concurrent.duration.FiniteDuration): IO[Unit] =
    IO.monotonic.flatMap(now => IO(endAt(task, (now - start).toNanos)))

  /** The most tasks that ran at once. */
  def peakInFlight: Int = peak.get

  /** Tasks that finished exactly once. */
  def completed: Int = (0 until tasks).count(times.get(_) == 1)

  /** Tasks that finished other than exactly once, with how often (empty when the approach is correct). */
  def miscounted: Vector[(Int, Int)] = (0 until tasks).map(i => (i, times.get(i))).filter(_._2 != 1).toVector

  /** When each task finished, ns after time zero. */
  def finishedAt: Vector[Long] = Vector.tabulate(tasks)(endedAt.get)
