package weir

import cats.effect.{Deferred, IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import fs2.Stream
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/**
 * "A slow task holds only its own slot; a slow key never blocks the other keys" ([[TaskOrder]]), at the limit:
 * as many tasks as the limit, after every other task, wait until all the others have ended. Every other task
 * must start while they wait, unordered and per key, whatever the others' durations (none: cheap tasks, and
 * seconds), so the run ends; in virtual time.
 */
class WaitingTasksSuite extends ScalaCheckSuite:

  private final case class Task(id: Int, key: String, seconds: Int, waits: Boolean)

  private val scenario: Gen[(Vector[Task], Int, Boolean)] =
    for
      limit <- Gen.choose(1, 4)
      keys <- Gen.choose(1, 6)
      n <- Gen.choose(0, 40)
      others <- Gen.listOfN(
        n,
        Gen.zip(Gen.choose(0, keys - 1), Gen.frequency(4 -> Gen.const(0), 1 -> Gen.choose(1, 3)))
      )
      keyed <- Gen.oneOf(false, true)
    yield
      val first = others.zipWithIndex.map { case ((k, s), i) => Task(i, s"k$k", s, waits = false) }
      // each waiting task the last of a key of its own
      val waiting = (0 until limit).map(j => Task(n + j, s"w$j", 0, waits = true))
      ((first ++ waiting).toVector, limit, keyed)

  property(
    "tasks waiting for all the others, as many as the limit, after them: the others start, the run ends"
  ) {
    Prop.forAllNoShrink(scenario) { (tasks, limit, keyed) =>
      val others = tasks.count(!_.waits)
      val program =
        for
          ended <- Ref[IO].of(0)
          allEnded <- Deferred[IO, Unit]
          starts <- Ref[IO].of(Vector.empty[Int])
          handler = (t: Task) =>
            starts.update(_ :+ t.id) *>
              (if t.waits then allEnded.get
               else
                 IO.sleep(t.seconds.seconds) *>
                   ended.updateAndGet(_ + 1).flatMap(e => allEnded.complete(()).void.whenA(e == others)))
          pipeline = Pipeline(Stream.emits(tasks).covary[IO]).process(handler).withLimit(Limit.fixed(limit))
          _ <- IO.whenA(others == 0)(allEnded.complete(()).void)
          summary <- (if keyed then pipeline.withOrder(TaskOrder.byKey((t: Task) => t.key)) else pipeline).run
          started <- starts.get
        yield (summary, started)
      import cats.effect.unsafe.implicits.global
      val (summary, started) = TestControl.executeEmbed(program).unsafeRunSync()
      assertEquals(summary.succeeded, tasks.size.toLong)
      if keyed then
        started.groupBy(id => tasks(id).key).values.foreach(ids => assertEquals(ids, ids.sorted))
      true
    }
  }
