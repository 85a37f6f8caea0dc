package weir.lab.durable

import cats.effect.IO
import cats.syntax.all.*
import weir.lab.durable.WorkflowPlan.{Edge, Node, Scenario}
import weir.postgres.*

import java.lang.management.ManagementFactory
import scala.concurrent.duration.*

/**
 * The workflow run's timed rounds: a graph's tasks per second against as many independent tasks', on
 * worker JVMs that nobody kills (see [[WorkflowPhase]]); and, between the two, independent tasks whose
 * completions are kept in `finished`, as a graph's are (its tasks' results and its page need them), which
 * prices that part of a graph's cost apart from the rest.
 */
object GraphRounds:

  /**
   * One timed round, tasks per second: `tasks` independent tasks, as many independent tasks kept once
   * completed (`keepCompleted`), and a 1 → n → 1 graph as large.
   */
  final case class Round(independent: Double, kept: Double, graph: Double):
    def ratio: Double = graph / independent
    def keptRatio: Double = kept / independent
    def graphOverKept: Double = graph / kept

  /**
   * `rounds` rounds of the three arms, worked by `workers` worker JVMs that nobody kills, each serving the
   * arms' two queues (the kept arm's keeps its completions; a graph's are kept whatever its worker says), each arm enqueued
   * into its paused queue and timed from its resume to an empty queue, so that a round times the tasks' run
   * alone, not their enqueue; after a first round of the same size, not timed, which compiles the workers'
   * paths. The arms take turns going first (round r starts with arm r of three), so that none always runs
   * on the warmest JVMs.
   */
  def run(
      lab: LabDatabase,
      db: Database[IO],
      queue: String,
      tasks: Int,
      rounds: Int,
      workers: Int,
      limit: Int
  ): IO[Vector[Round]] =
    val keptQueue = s"$queue-kept"
    val args = List(lab.url, lab.schema.name, queue, limit.toString, "pair", "1000", "3000")
    val controls = TaskAdmin(db).queues
    // This JVM's compiler goes on compiling the enqueue's code (a graph's most) for up to a second after it
    // returns, and its collector has what the enqueue left to collect, on a core the timed tasks need: an arm
    // starts after a full collection, once the compiler's total time has not moved for 200 ms (or after 10 s).
    val compiled = IO(ManagementFactory.getCompilationMXBean.getTotalCompilationTime)
    val quiet = IO.blocking(System.gc()) *>
      (
        compiled,
        IO.sleep(200.millis) *> compiled
      ).tupled.iterateUntil(_ == _).void.timeoutTo(10.seconds, IO.unit)
    def fan(q: TaskQueue[IO, Int], n: Int): TaskGraph =
      val middle = (1 to n - 2).toVector
      WorkflowPhase.graphOf(
        q,
        Node(0, Scenario.FanOut, Vector.empty, false) +:
          middle.map(i => Node(i, Scenario.FanOut, Vector(Edge(0, false)), false)) :+
          Node(n - 1, Scenario.FanOut, middle.map(Edge(_, false)), false)
      )
    // each JVM serves both queues (LabWorker's `pair`): the kept arm runs on code compiled as the others'
    val children = List.fill(workers)(Children.start(args)).parSequence
    (children, lab.emptiness(queue), lab.emptiness(keptQueue)).tupled.use { (children, empty, keptEmpty) =>
      // each arm's bounds on the wall clock, in a line scripts/cpu-split.py reads to split the machine's CPU
      // time by phase
      def rate(phase: String, queue: String, empty: IO[Boolean])(enqueue: IO[Unit]): IO[Double] =
        for
          // resumed whatever happens, the timed start on success: a failed enqueue leaves no queue paused
          _ <- (controls.pause(queue) *> enqueue *> quiet).guarantee(controls.resume(queue))
          t0 <- IO.monotonic
          w0 <- IO.realTime
          _ <- (IO.sleep(10.millis) *> empty).iterateUntil(identity)
          t1 <- IO.monotonic
          w1 <- IO.realTime
          _ <- IO.println(s"  phase $phase ${w0.toMillis} ${w1.toMillis}")
        yield tasks / ((t1 - t0).toNanos / 1e9)
      def round(name: String, first: Int): IO[Round] =
        def independent(q: TaskQueue[IO, Int]) = q.enqueueMany((1 to tasks).map(NewTask(_))).void
        val plain = TaskQueue[IO, Int](db, queue)
        val arms = Vector(
          rate(s"$name-independent", queue, empty)(independent(plain)),
          rate(s"$name-kept", keptQueue, keptEmpty)(independent(TaskQueue[IO, Int](db, keptQueue))),
          rate(s"$name-graph", queue, empty)(fan(plain, tasks).enqueue(db).void)
        )
        val order = Vector.tabulate(3)(i => (first + i) % 3)
        order.traverse(arms).map(rates => order.zip(rates).sortBy(_._1).map(_._2)).map {
          case Vector(i, k, g) => Round(i, k, g)
          case other => throw new IllegalStateException(s"three arms, not ${other.size}")
        }
      (controls.add(queue) *> controls.add(keptQueue) *> round("warm-up", 0)) *>
        (1 to rounds).toVector.traverse(r =>
          round(s"round-$r", (r - 1) % 3).flatTap(x =>
            IO.println(
              f"  workflow timed round $r: independent ${x.independent}%.0f tasks/s, kept ${x.kept}%.0f " +
                f"(${x.keptRatio}%.2f×), graph ${x.graph}%.0f (${x.ratio}%.2f×; ${x.graphOverKept}%.2f× the kept)"
            )
          )
        ) <*
        children.traverse_(c => IO.blocking(c.process.destroy())) <*
        children.traverse_(c => IO.interruptible(c.process.waitFor()).void)
    }
