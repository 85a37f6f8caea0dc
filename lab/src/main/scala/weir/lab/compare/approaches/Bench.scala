package weir.lab.compare.approaches

import cats.effect.IO
import cats.effect.std.Semaphore
import fs2.{Chunk, Pipe, Stream}
import weir.lab.compare.scenarios.Plan

import java.util.concurrent.atomic.{AtomicInteger, AtomicIntegerArray, AtomicLongArray}
import scala.concurrent.duration.*

/** Which clock a run uses: the machine's, or Cats Effect's `TestControl`, where sleeping costs nothing. */
enum Clock:
  case Real, Virtual

/**
 * What every approach is built from: the write-up's `produce`/`produceStream` and `consume`, over the delays
 * of one [[Plan]] (so every approach sees the same delays), scaled by `scale` and recorded by a
 * [[Recorder]]. Approaches must consume every task exactly once and end when all are done.
 */
final class Bench(
    val plan: Plan,
    val clock: Clock,
    val scale: Double,
    val recorder: Recorder,
    window: Option[Int] = None
):
  require(scale > 0, s"time scale must be > 0, was: $scale")
  window.foreach(w =>
    require(
      w >= plan.workload.slots,
      s"ordered window must be >= the slots (${plan.workload.slots}), was: $w"
    )
  )

  /** How many tasks the ordered approaches may have started but not yet emitted (default: the slots). */
  def orderedWindow: Int = window.getOrElse(workload.slots)

  /**
   * The write-up's ordered `parEvalMap(slots)`: at most `slots` tasks run at once, results in input order.
   * With the default window that is fs2 3's `parEvalMap(slots)` itself, which lets no task start while
   * `slots` tasks are started and not yet emitted. A wider window (`--ordered-window W`) lets up to `W` be
   * started and not yet emitted, `slots` of them running (a FIFO semaphore inside `parEvalMap(W)`): the
   * knob that measures how much of fs2 3's slowdown against the write-up's fs2 2.5 figures comes from the
   * window's width (docs/lab/compare.md).
   */
  def ordered[A, B](f: A => IO[B]): Pipe[IO, A, B] =
    in =>
      if orderedWindow == workload.slots then in.parEvalMap(workload.slots)(f)
      else
        Stream.eval(Semaphore[IO](workload.slots.toLong)).flatMap { running =>
          in.parEvalMap(orderedWindow)(a => running.permit.surround(f(a)))
        }

  def workload = plan.workload

  /** `ms` of workload time as a real (or virtual) duration. */
  def delay(ms: Long): FiniteDuration =
    if scale == 1.0 then ms.millis else math.round(ms * scale * 1e6).nanos

  /** Waits batch `b`'s produce delay, then returns its task ids (the write-up's `produce(start, end)`). */
  def produceBatch(b: Int): IO[Chunk[Int]] =
    IO.sleep(delay(plan.produceMs(b))) *>
      recorder.produced(b, workload.idsOf(b).size).as(Chunk.from(workload.idsOf(b)))

  /** Producer `p` of `n`: its batches one after the other, one chunk per batch (the write-up's `produceStream`). */
  def producer(p: Int, n: Int): Stream[IO, Int] =
    Stream.range(workload.batchesOf(p, n).start, workload.batchesOf(p, n).end).evalMap(produceBatch).unchunks

  /** The single producer of the one-producer approaches. */
  def producer: Stream[IO, Int] = producer(0, 1)

  /** Waits task `i`'s consume delay, then records it as done (the write-up's `consume`). */
  def consume(i: Int): IO[Unit] =
    recorder.begin(i) *> IO.sleep(delay(plan.consumeMs(i))) *> recorder.consumed(i)

/**
 * Counts and times produced batches and consumed tasks (relative to `start`), for the checks, the live
 * view and the timeline chart. Lock-free: one atomic write per event.
 */
final class Recorder(tasks: Int, batches: Int):
  private val t0 = new java.util.concurrent.atomic.AtomicLong(0L)
  private val producedAt = new AtomicLongArray(batches)
  private val consumedAt = new AtomicLongArray(tasks)
  private val timesConsumed = new AtomicLongArray(tasks)
  private val producedCount = new AtomicInteger(0)
  private val consumedCount = new AtomicInteger(0)
  private val inFlight = new AtomicInteger(0)
  private val starts = new AtomicInteger(0)
  private val startOrder = new AtomicIntegerArray(tasks)
  private val maxInFlight = new AtomicInteger(0)

  /** Marks time zero. */
  def start: IO[Unit] = IO.monotonic.flatMap(t => IO(t0.set(t.toNanos)))

  def produced(batch: Int, size: Int): IO[Unit] = IO.monotonic.flatMap { t =>
    IO { producedAt.set(batch, t.toNanos - t0.get); val _ = producedCount.addAndGet(size) }
  }

  /**
   * Task `task`'s consume delay begins: it takes a slot and its place in the start order in one step (a
   * second `IO` here would move the runtime's auto-yields, and with them the virtual clock's schedules).
   */
  def begin(task: Int): IO[Unit] = IO {
    val now = inFlight.incrementAndGet()
    val _ = maxInFlight.accumulateAndGet(now, math.max)
    val k = starts.getAndIncrement()
    if k < tasks then startOrder.set(k, task)
  }

  def consumed(task: Int): IO[Unit] = IO.monotonic.flatMap { t =>
    IO {
      val _ = inFlight.decrementAndGet()
      consumedAt.set(task, t.toNanos - t0.get)
      val _ = timesConsumed.incrementAndGet(task)
      val _ = consumedCount.incrementAndGet()
    }
  }

  /** The tasks in the order they began, when every task began exactly once (else `None`). */
  def started: Option[Vector[Int]] =
    Option.when(starts.get == tasks)(Vector.tabulate(tasks)(startOrder.get))
      .filter(order => order.distinct.size == tasks)

  def producedSoFar: Int = producedCount.get
  def consumedSoFar: Int = consumedCount.get

  /** The most tasks ever consuming at once: never above the workload's slots for a correct approach. */
  def peakInFlight: Int = maxInFlight.get

  /** Tasks consumed other than exactly once (empty when the approach is correct). */
  def miscounted
      : Vector[(Int, Long)] = (0 until tasks).iterator.map(i => (i, timesConsumed.get(i))).filter(_._2 !=
    1L).toVector

  /** When each batch was handed over and each task finished, ns from the start. */
  def producedTimes: Vector[Long] = Vector.tabulate(batches)(producedAt.get)
  def consumedTimes: Vector[Long] = Vector.tabulate(tasks)(consumedAt.get)
