package weir.lab.durable

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.lab.durable.WorkflowPlan.{Edge, Node, Scenario}
import weir.postgres.*

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
   * `workers` worker JVMs that nobody kills, each timed from its enqueue's commit to an empty queue; after
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
    val empty = lab.read("whether the queue is empty")(
      (Fragment.const(s"SELECT NOT EXISTS (SELECT 1 FROM ${lab.schema("tasks")} WHERE queue = ") ++
        fr0"$queue)").query[Boolean].unique
    )
    // each phase's bounds on the wall clock, in a line scripts/cpu-split.py reads to split the machine's CPU
    // time by phase
    def rate(phase: String, n: Int)(enqueue: IO[Unit]): IO[Double] =
      for
        _ <- enqueue
        t0 <- IO.monotonic
        w0 <- IO.realTime
        _ <- (IO.sleep(10.millis) *> empty).iterateUntil(identity)
        t1 <- IO.monotonic
        w1 <- IO.realTime
        _ <- IO.println(s"  phase $phase ${w0.toMillis} ${w1.toMillis}")
      yield n / ((t1 - t0).toNanos / 1e9)
    def fan(n: Int): TaskGraph =
      val middle = (1 to n - 2).toVector
      WorkflowPhase.graphOf(
        q,
        Node(0, Scenario.FanOut, Vector.empty, false) +:
          middle.map(i => Node(i, Scenario.FanOut, Vector(Edge(0, false)), false)) :+
          Node(n - 1, Scenario.FanOut, middle.map(Edge(_, false)), false)
      )
    def round(name: String, n: Int, graphFirst: Boolean): IO[Round] =
      val independent = rate(s"$name-independent", n)(q.enqueueMany((1 to n).map(NewTask(_))).void)
      val graph = rate(s"$name-graph", n)(fan(n).enqueue(db).void)
      if graphFirst then (graph, independent).mapN((g, i) => Round(i, g))
      else (independent, graph).mapN(Round.apply)
    List.fill(workers)(Children.start(args)).parSequence.use { children =>
      round("warm-up", tasks, graphFirst = false) *>
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
