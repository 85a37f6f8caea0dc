package weir.lab.compare.scenarios

import scala.util.Random
import scala.util.hashing.MurmurHash3

/**
 * One run's concrete delays for a workload, drawn from a seed: every approach in the run sees exactly these.
 *
 * Produce delays come from one random stream and consume delays from another, both derived from
 * `(seed, run)` only, so changing the consume distribution never moves the produce delays and run `r` of
 * seed `s` is the same on every machine.
 */
final case class Plan(
    workload: Workload,
    seed: Long,
    run: Int,
    produceMs: Vector[Long],
    consumeMs: Vector[Long]
):

  /** When each task becomes available (ms from the start) with `producers` producers that never wait. */
  def arrivals(producers: Int): Vector[Arrival] =
    val byProducer = (0 until producers).toVector.map { p =>
      workload.batchesOf(p, producers).toVector
        .scanLeft((0L, -1)) { case ((t, _), b) => (t + produceMs(b), b) }
        .drop(1)
        .flatMap((t, b) => workload.idsOf(b).map(i => Arrival(t, p, i)))
    }
    // first come, first served; a tie goes to the lower producer, then to the lower task id
    byProducer.flatten.sortBy(a => (a.at, a.producer, a.task))

object Plan:

  def draw(workload: Workload, seed: Long, run: Int): Plan =
    def rng(stream: Int) = new Random(MurmurHash3.finalizeHash(
      MurmurHash3.mix(MurmurHash3.mix(seed.hashCode, run), stream),
      3
    ).toLong ^ seed)
    val rp = rng(1)
    val rc = rng(2)
    val produce = Vector.tabulate(workload.batches) { b =>
      val pause = workload.burst match
        case Some(Burst(every, pause)) if b > 0 && b % every == 0 => pause
        case _ => 0L
      workload.produce.sample(rp) + pause
    }
    val consume = Vector.fill(workload.tasks)(workload.consume.sample(rc))
    Plan(workload, seed, run, produce, consume)

/** Task `task` from producer `producer` is available at `at` ms. */
final case class Arrival(at: Long, producer: Int, task: Int)
