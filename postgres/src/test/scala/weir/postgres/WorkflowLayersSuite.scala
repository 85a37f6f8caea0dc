package weir.postgres

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

/**
 * A workflow's layers ([[WorkflowView.layers]]) on random graphs listed in id order, some parents outside
 * the list: each task's layer is the length of the longest path to it from a task that waits for none of
 * the listed ones, found here by walking the paths back from it; a prefix of the list (a read cut at its limit) keeps
 * every layer it holds.
 */
class WorkflowLayersSuite extends ScalaCheckSuite:

  /** Tasks 1..n in id order, each waiting for some smaller ids, and now and then for one outside (< 1). */
  private val graphs: Gen[Vector[(Long, Vector[Long])]] =
    for
      n <- Gen.choose(0, 30)
      parents <- Gen.sequence[Vector[Vector[Long]], Vector[Long]]((1 to n).map(i =>
        Gen.containerOf[Vector, Long](Gen.choose(
          -3L,
          i - 1L
        ).map(p => if p == 0 then -1L else p)).map(_.distinct)
      ))
    yield (1 to n).toVector.map(_.toLong).zip(parents)

  /** The longest path to each task from a task without listed parents, by walking the paths back. */
  private def longest(graph: Map[Long, Vector[Long]]): Map[Long, Int] =
    val memo = scala.collection.mutable.HashMap.empty[Long, Int]
    def walk(id: Long): Int =
      memo.get(id) match
        case Some(n) => n
        case None =>
          val n = graph(id).filter(graph.contains).map(p => walk(p) + 1).maxOption.getOrElse(0)
          memo(id) = n
          n
    graph.keys.map(id => id -> walk(id)).toMap

  property("each layer is the longest path from a root, and a prefix of the list keeps its layers") {
    Prop.forAll(graphs, Gen.choose(0, 30)) { (graph, cut) =>
      val layers = WorkflowView.layers(graph)
      val paths = longest(graph.toMap)
      assertEquals(layers, graph.map((id, _) => paths(id)))
      assertEquals(WorkflowView.layers(graph.take(cut)), layers.take(cut))
    }
  }
