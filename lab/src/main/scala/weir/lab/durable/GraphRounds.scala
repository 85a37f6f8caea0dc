package weir.lab.durable

import cats.effect.IO
import cats.syntax.all.*
import weir.lab.durable.WorkflowPlan.{Edge, Node, Scenario}
import weir.postgres.*

import java.lang.management.ManagementFactory
import scala.concurrent.duration.*

/**
 * The workflow run's timed rounds: a graph's tasks per second against as many independent tasks', on
 * worker JVMs that nobody kills (see [[WorkflowPhase]]).
 */
object GraphRounds:

  /** One timed round: tasks per second of `tasks` independent tasks and of a 1 → n → 1 graph as many. */
  final case class Round(independent: Double, graph: Double):
    def ratio: Double = graph / independent

  /**
   * `rounds` rounds, each `tasks` independent no-op tasks and a 1 → (tasks - 2) → 1 graph, worked by
   * `workers` worker JVMs that nobody kills, each enqueued into the paused queue and timed from its resume
   * to an empty queue, so that the round times the tasks' run alone, not their enqueue; after
   * a first round of the same size, not timed, which compiles the workers' paths. The two take turns going
   * first (the independent tasks in odd rounds), so that neither always runs on the warmer JVMs.
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
    val q = TaskQueue[IO, Int](db, queue)
    val args = List(lab.url, lab.schema.name, queue, limit.toString, "noop", "1000", "3000")
    val controls = TaskAdmin(db).queues
    // This JVM's compiler goes on compiling the enqueue's code (a graph's most) for up to a second after it
    // returns, on a core the timed tasks need: a round starts once the compiler's total time has not moved
    // for 200 ms (or after 10 s).
    val compiled = IO(ManagementFactory.getCompilationMXBean.getTotalCompilationTime)
    val compilerQuiet =
      (
        compiled,
        IO.sleep(200.millis) *> compiled
      ).tupled.iterateUntil(_ == _).void.timeoutTo(10.seconds, IO.unit)
    def fan(n: Int): TaskGraph =
      val middle = (1 to n - 2).toVector
      WorkflowPhase.graphOf(
        q,
        Node(0, Scenario.FanOut, Vector.empty, false) +:
          middle.map(i => Node(i, Scenario.FanOut, Vector(Edge(0, false)), false)) :+
          Node(n - 1, Scenario.FanOut, middle.map(Edge(_, false)), false)
      )
    (List.fill(workers)(Children.start(args)).parSequence, lab.emptiness(queue)).tupled.use {
      (children, empty) =>
        // each phase's bounds on the wall clock, in a line scripts/cpu-split.py reads to split the machine's
        // CPU time by phase
        def rate(phase: String, n: Int)(enqueue: IO[Unit]): IO[Double] =
          for
            _ <- controls.pause(queue) *> enqueue *> compilerQuiet
            _ <- controls.resume(queue)
            t0 <- IO.monotonic
            w0 <- IO.realTime
            _ <- (IO.sleep(10.millis) *> empty).iterateUntil(identity)
            t1 <- IO.monotonic
            w1 <- IO.realTime
            _ <- IO.println(s"  phase $phase ${w0.toMillis} ${w1.toMillis}")
          yield n / ((t1 - t0).toNanos / 1e9)
        def round(name: String, n: Int, graphFirst: Boolean): IO[Round] =
          val independent = rate(s"$name-independent", n)(q.enqueueMany((1 to n).map(NewTask(_))).void)
          val graph = rate(s"$name-graph", n)(fan(n).enqueue(db).void)
          if graphFirst then (graph, independent).mapN((g, i) => Round(i, g))
          else (independent, graph).mapN(Round.apply)
        controls.add(queue) *> round("warm-up", tasks, graphFirst = false) *>
          (1 to rounds).toVector.traverse(r =>
            round(s"round-$r", tasks, graphFirst = r % 2 == 0).flatTap(x =>
              IO.println(
                f"  workflow timed round $r: independent ${x.independent}%.0f tasks/s, graph ${x.graph}%.0f tasks/s (${x.ratio}%.2f×)"
              )
            )
          ) <*
          children.traverse_(c => IO.blocking(c.process.destroy())) <*
          children.traverse_(c => IO.interruptible(c.process.waitFor()).void)
    }
