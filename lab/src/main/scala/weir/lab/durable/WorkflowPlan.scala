package weir.lab.durable

import scala.util.Random

/**
 * The tasks of the workflow run of `./weir lab durable` ([[WorkflowPhase]]) and how each must end. Every
 * task has a key of its own, its payload's absolute value (the payload is negative for a task that fails
 * by design, which is enqueued with one attempt and so ends dead); a batch's callback has a key from
 * [[LabWorker.callbackBase]] on. The plan says, from the edges alone, how each task ends ([[expected]]), so
 * that the run can be checked against it ([[WorkflowCheck]]).
 */
object WorkflowPlan:

  /** The shapes the run enqueues, each checked and timed on its own. */
  enum Scenario(val label: String):
    case FanOut extends Scenario("fan-out")
    case Chain extends Scenario("chain")
    case Dag extends Scenario("dag")
    case Batch extends Scenario("batch")

  /** How a task ends: as the `finished` table's `state` says. */
  enum Outcome(val state: String):
    case Completed extends Outcome("completed")
    case Dead extends Outcome("dead")
    case Cancelled extends Outcome("cancelled")

  object Outcome:
    def of(state: String): Option[Outcome] = values.find(_.state == state)

  /** A task waits for `parent` (a key) to complete, or with `anyOutcome` to end however it ends. */
  final case class Edge(parent: Int, anyOutcome: Boolean)

  /** A task of the plan: its key, its scenario, the tasks it waits for, and whether its handler fails. */
  final case class Node(key: Int, scenario: Scenario, parents: Vector[Edge], fails: Boolean):
    def payload: Int = if fails then -key else key

  /** What the lab enqueues in one go: a graph (one transaction), or a batch (open, adds, close). */
  enum Part:
    case Graph(tasks: Vector[Node])

    /**
     * A batch: its callback's key, members added one by one in one enqueue (`plain`, without parents) and a
     * graph of members (`graph`, some waiting for others).
     */
    case Batch(callback: Int, plain: Vector[Node], graph: Vector[Node])

    def nodes: Vector[Node] = this match
      case Graph(ns) => ns
      case Batch(_, plain, graph) => plain ++ graph

  /** The sizes of a run's scenarios and the seed of its random graphs and batches. */
  final case class Sizes(
      fanOut: Int,
      chain: Int,
      dags: Int,
      dagTasks: Int,
      batches: Int,
      batchMembers: Int,
      seed: Long
  )

  /** A run's plan: its units in the order they are enqueued, each scenario's units together. */
  final case class Plan(units: Vector[(Scenario, Vector[Part])]):
    lazy val nodes: Vector[Node] = units.flatMap(_._2.flatMap(_.nodes))
    lazy val batches: Vector[Part.Batch] = units.flatMap(_._2.collect { case b: Part.Batch => b })
    lazy val byKey: Map[Int, Node] = nodes.map(n => n.key -> n).toMap

    /** How each task (callbacks included) ends, from the edges and the failing tasks alone. */
    lazy val expected: Map[Int, Outcome] =
      val tasks = WorkflowPlan.expected(nodes)
      tasks ++ batches.map(_.callback -> Outcome.Completed)

    /** The counts (completed, dead, cancelled) that each batch's callback must read. */
    lazy val callbackCounts: Map[Int, (Long, Long, Long)] = batches.map { b =>
      val ends = b.nodes.map(n => expected(n.key))
      b.callback -> (
        ends.count(_ == Outcome.Completed).toLong,
        ends.count(_ == Outcome.Dead).toLong,
        ends.count(_ == Outcome.Cancelled).toLong
      )
    }.toMap

  /**
   * How each of `nodes` ends, given in an order where every parent comes before its dependents: cancelled
   * when a parent it needs completed does not complete (it never runs); otherwise it runs, and ends dead if
   * it fails by design, completed if not.
   */
  def expected(nodes: Vector[Node]): Map[Int, Outcome] =
    nodes.foldLeft(Map.empty[Int, Outcome]) { (ends, n) =>
      val cancelled = n.parents.exists(e => !e.anyOutcome && !ends.get(e.parent).contains(Outcome.Completed))
      ends.updated(
        n.key,
        if cancelled then Outcome.Cancelled else if n.fails then Outcome.Dead else Outcome.Completed
      )
    }

  /**
   * A run's plan: a fan-out and fan-in (one task, `fanOut` tasks after it, one after them all), a chain of
   * `chain` tasks, `dags` random graphs of `dagTasks` tasks and `batches` batches of `batchMembers` members,
   * drawn from `seed`. In a random graph each task waits for up to three of the ten tasks before it, one
   * edge in three taking any outcome, and one task in twenty fails; a batch has plain members, one in ten
   * failing, and a graph of members whose first task fails, so that its dependents are cancelled.
   */
  def of(sizes: Sizes): Plan =
    val random = new Random(sizes.seed)
    val keys = Iterator.from(1)
    def key(): Int = keys.next()
    val fanOut =
      val root = Node(key(), Scenario.FanOut, Vector.empty, fails = false)
      val middle =
        Vector.fill(sizes.fanOut)(Node(key(), Scenario.FanOut, Vector(Edge(root.key, false)), false))
      val sink = Node(key(), Scenario.FanOut, middle.map(m => Edge(m.key, false)), fails = false)
      Part.Graph(root +: middle :+ sink)
    val chain = Part.Graph((1 to sizes.chain).foldLeft(Vector.empty[Node]) { (acc, _) =>
      acc :+ Node(key(), Scenario.Chain, acc.lastOption.map(p => Edge(p.key, false)).toVector, false)
    })
    def dag(
        size: Int,
        scenario: Scenario,
        failRate: Double
    ): Vector[Node] = (0 until size).foldLeft(Vector.empty[Node]) { (acc, i) =>
      val window = acc.takeRight(10)
      val parents = random.shuffle(window).take(if i == 0 then 0 else random.nextInt(4))
        .map(p => Edge(p.key, anyOutcome = random.nextInt(3) == 0)).sortBy(_.parent)
      acc :+ Node(key(), scenario, parents, fails = random.nextDouble() < failRate)
    }
    val dags = Vector.fill(sizes.dags)(Part.Graph(dag(sizes.dagTasks, Scenario.Dag, 0.05)))
    val batches = Vector.fill(sizes.batches) {
      val callback = LabWorker.callbackBase + key()
      val plain = Vector.fill(sizes.batchMembers - sizes.batchMembers / 4)(
        Node(key(), Scenario.Batch, Vector.empty, fails = random.nextInt(10) == 0)
      )
      val graph = dag(sizes.batchMembers / 4, Scenario.Batch, 0.05) match
        case first +: rest => first.copy(fails = true) +: rest
        case none => none
      Part.Batch(callback, plain, graph)
    }
    Plan(Vector(
      Scenario.FanOut -> Vector(fanOut),
      Scenario.Chain -> Vector(chain),
      Scenario.Dag -> dags,
      Scenario.Batch -> batches
    ))
