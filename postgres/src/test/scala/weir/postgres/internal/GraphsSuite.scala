package weir.postgres.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.postgres.{After, Schema}

/**
 * The order a graph's tasks are enqueued in, on random graphs: every task after those it waits for, and
 * otherwise in the order given; a graph with a cycle gets one of its cycles back, each task waiting for the
 * next.
 */
class GraphsSuite extends ScalaCheckSuite:

  private val task = Sql.EncodedTask("0", 0, 0L, 1, None, None, None)

  private def node(i: Int, after: Vector[Int]): Graphs.Node =
    Graphs.Node(
      s"task 'n$i'",
      s"n$i",
      "q",
      Schema.default,
      task,
      Nil,
      Vector.empty,
      after.map(p => After.completed(s"n$p"))
    )

  /** `n` tasks given in a shuffled order, each waiting for some tasks of smaller number: a DAG. */
  private val dags: Gen[Vector[(Int, Vector[Int])]] =
    for
      n <- Gen.choose(0, 40)
      parents <- Gen.sequence[Vector[Vector[Int]], Vector[Int]]((0 until n).map(i =>
        if i == 0 then Gen.const(Vector.empty[Int])
        else Gen.containerOf[Vector, Int](Gen.choose(0, i - 1)).map(_.distinct)
      ))
      seed <- Gen.long
    yield new scala.util.Random(seed).shuffle((0 until n).toVector).map(i => i -> parents(i))

  property("the order puts every task after its parents, and keeps the given order among the others") {
    Prop.forAll(dags) { graph =>
      val nodes = graph.map(node(_, _))
      val position = graph.map(_._1).zipWithIndex.toMap
      Graphs.order(nodes) match
        case Left(cycle) => fail(s"a DAG has no cycle, got $cycle")
        case Right(order) =>
          assertEquals(order.sorted, nodes.indices.toVector)
          val at = order.zipWithIndex.toMap
          graph.zipWithIndex.foreach { case ((_, parents), i) =>
            parents.foreach(p => assert(at(position(p)) < at(i), s"n$p after its dependent in $order"))
          }
          // among the tasks ready together, the given order: a task never goes before an earlier one that was
          // ready when it was placed
          order.zipWithIndex.foreach { (i, k) =>
            val readyBefore = order.take(k).toSet
            val earlierReady = (0 until i).filter(j =>
              !readyBefore(j) && graph(j)._2.forall(p => readyBefore(position(p)))
            )
            assert(earlierReady.isEmpty, s"task ${nodes(i).handle} placed before ready earlier $earlierReady")
          }
          assertEquals(Graphs.errors(nodes, Schema.default), Nil)
    }
  }

  property("a graph with a back edge reports a cycle whose every task waits for the next") {
    Prop.forAll(dags.suchThat(_.exists(_._2.nonEmpty))) { graph =>
      // the task of a deepest edge also waited for by its parent: a cycle through that edge
      val (child, parents) = graph.find(_._2.nonEmpty).get
      val withBack = graph.map((i, ps) => if i == parents.head then (i, ps :+ child) else (i, ps))
      val nodes = withBack.map(node(_, _))
      Graphs.order(nodes) match
        case Right(order) => fail(s"a cycle went unseen: $order")
        case Left(cycle) =>
          assert(cycle.nonEmpty)
          cycle.indices.foreach { k =>
            val from = nodes(cycle(k))
            val to = nodes(cycle((k + 1) % cycle.size))
            assert(
              from.after.exists(_.parent == to.handle),
              s"${from.handle} does not wait for ${to.handle}: $cycle"
            )
          }
          val errors = Graphs.errors(nodes, Schema.default)
          assertEquals(errors.size, 1, errors.toString)
          assert(errors.head.endsWith("wait for each other: a graph has no cycle"), errors.head)
    }
  }
