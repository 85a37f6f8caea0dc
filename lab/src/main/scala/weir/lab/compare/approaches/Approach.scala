package weir.lab.compare.approaches

import cats.effect.IO
import weir.lab.compare.scenarios.Workload

/**
 * One way of wiring producers to consumers, run over a [[Bench]]. Each approach is a reimplementation on
 * Cats Effect 3 and FS2 of a design the write-up (seed 000) describes; see each file for which one.
 */
trait Approach:

  /** A short, stable name, used on the command line and in the JSON output. */
  def name: String

  /** One line on what it does. */
  def summary: String

  /** How many producers it runs on `workload` (one, unless it is built to run several). */
  def producers(workload: Workload): Int = 1

  /** Where it runs; see [[Placement]]. */
  def placement: Placement = Placement.Shared

  /**
   * True when, on the real clock, it blocks threads of the runtime it runs on (a `put` or `take` on a
   * blocking queue in plain `IO`): it must then not share that runtime with another such approach.
   */
  def blocksThreads: Boolean = false

  /** Consumes every task of the bench exactly once, then ends. */
  def run(bench: Bench): IO[Unit]

/** Where the runner runs an approach. */
enum Placement:
  /** On the runner's runtime (the real one, or `TestControl`'s under `--clock virtual`). */
  case Shared

  /**
   * In real time on a runtime of its own whose compute pool is `threads` fixed threads (the write-up's
   * `Executors.newFixedThreadPool(2)`), bounded by a timeout and torn down afterwards: for approaches
   * that block threads.
   */
  case FixedPool(threads: Int)

object Approach:

  /** Every approach, in the write-up's order, then the designs it only sketches, then weir. */
  val all: Vector[Approach] = Vector(
    BatchApproach,
    BlockingQueueApproach,
    EffectQueueApproach,
    StreamApproach,
    UnorderedStreamApproach,
    PrefetchStreamApproach,
    ConcurrentProducersQueueApproach,
    ConcurrentProducersParJoinApproach,
    WorkStealingApproach,
    WeirApproach,
    BlockingDeadlockApproach
  )

  def byName(name: String): Option[Approach] = all.find(_.name == name)
