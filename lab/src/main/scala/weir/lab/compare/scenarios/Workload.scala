package weir.lab.compare.scenarios

import weir.lab.Delay

/**
 * A load shape: how many tasks, how they are batched and produced, how long each takes to consume, and how
 * many producers and consumer slots the approaches get.
 *
 * Tasks are the numbers `0 until tasks`, cut into batches of `batch` (the last may be shorter). A producer
 * waits the batch's produce delay, then hands over the whole batch. With `n` producers, producer `p` owns
 * the contiguous run of batches `[p * nb / n, (p + 1) * nb / n)` (the write-up splits the range the same
 * way), so the delays a batch or a task gets never depend on which approach runs it.
 *
 * @param producers producers for the approaches that run several (the concurrent-producer approaches,
 *                  work stealing and weir); the others always run one
 * @param slots     tasks in flight at once (the write-up's `batchSize` passed to `parEvalMap`)
 * @param buffer    capacity of the queue between producers and consumers (the write-up: `2 * batchSize`)
 * @param burst     when set, producers pause `pauseMs` more before every `batches`-th batch: bursty load
 */
final case class Workload(
    name: String,
    tasks: Int,
    batch: Int,
    producers: Int,
    slots: Int,
    buffer: Int,
    produce: Delay,
    consume: Delay,
    burst: Option[Burst] = None
):
  def batches: Int = (tasks + batch - 1) / batch

  /** The task ids of batch `b`. */
  def idsOf(b: Int): Range = (b * batch) until math.min(tasks, (b + 1) * batch)

  /** The batches producer `p` of `n` owns, in the order it produces them. */
  def batchesOf(p: Int, n: Int): Range = (p.toLong * batches / n).toInt until
    ((p + 1).toLong * batches / n).toInt

  /**
   * A burst: the tasks the producers hand over between two pauses (one batch each without `burst`), all
   * due at once when their batches fall due together.
   */
  def burstTasks: Int =
    math.min(tasks.toLong, producers.toLong * batch * burst.fold(1)(_.batches)).toInt

  /**
   * The buffer cannot take a whole burst, so producers may wait for room, which the unbounded [[Ideal]]'s
   * producers never do: the workload is also judged against the [[BoundedIdeal]].
   */
  def bufferBelowBurst: Boolean = buffer < burstTasks

  def describe: String =
    s"$tasks tasks in batches of $batch, produce ${produce.label} per batch, consume ${consume.label} per task, " +
      s"$slots slots, buffer $buffer" +
      burst.fold("")(b => s", a ${b.pauseMs} ms pause every ${b.batches} batches")

/** A pause of `pauseMs` before every `batches`-th batch (not before the first). */
final case class Burst(batches: Int, pauseMs: Long)

object Workload:

  /** The write-up's three shapes: 1000 tasks, batches of 100, 100 slots, one or two producers. */
  private def seed(name: String, produce: Delay, consume: Delay): Workload =
    Workload(name, tasks = 1000, batch = 100, producers = 2, slots = 100, buffer = 200, produce, consume)

  val slowProducer: Workload = seed("slow-producer", Delay.Fixed(1000), Delay.Uniform(10, 100))
  val balanced: Workload = seed("balanced", Delay.Fixed(1005), Delay.Uniform(10, 2000))
  val slowConsumer: Workload = seed("slow-consumer", Delay.Fixed(10), Delay.Uniform(10, 1000))

  val defaults: Vector[Workload] = Vector(slowProducer, balanced, slowConsumer)

  /**
   * The same shapes a tenth the size (100 tasks in batches of 10, 10 slots, buffer 20) with the same
   * delays: the same kind of schedule, for CI and a quick look.
   */
  val quick: Vector[Workload] = defaults.map(w => w.copy(tasks = 100, batch = 10, slots = 10, buffer = 20))

  /** Checks every field; the message names the workload, the field and the bad value. */
  def validate(w: Workload): Either[String, Workload] =
    def check(ok: Boolean, msg: => String) = Either.cond(ok, (), s"workload '${w.name}': $msg")
    for
      _ <- check(
        w.name.nonEmpty && w.name.forall(c => c.isLetterOrDigit || c == '-' || c == '_'),
        s"name must be letters, digits, '-' or '_', was: '${w.name}'"
      )
      _ <- check(w.tasks > 0, s"tasks must be > 0, was: ${w.tasks}")
      _ <- check(w.batch > 0, s"batch must be > 0, was: ${w.batch}")
      _ <- check(w.producers > 0, s"producers must be > 0, was: ${w.producers}")
      _ <- check(
        w.producers <= w.batches,
        s"producers must be <= the number of batches (${w.batches}), was: ${w.producers}"
      )
      _ <- check(w.slots > 0, s"slots must be > 0, was: ${w.slots}")
      _ <- check(w.buffer > 0, s"buffer must be > 0, was: ${w.buffer}")
      _ <- Delay.validate(w.produce).left.map(e => s"workload '${w.name}': produce: $e")
      _ <- Delay.validate(w.consume).left.map(e => s"workload '${w.name}': consume: $e")
      _ <- w.burst.fold(Right(()))(b =>
        for
          _ <- check(b.batches > 0, s"burst.batches must be > 0, was: ${b.batches}")
          _ <- check(b.pauseMs >= 0, s"burst.pause_ms must be >= 0, was: ${b.pauseMs}")
        yield ()
      )
    yield w
