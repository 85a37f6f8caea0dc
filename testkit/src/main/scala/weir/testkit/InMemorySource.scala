package weir.testkit

import cats.effect.kernel.{Async, Deferred, Ref, Resource, Unique}
import cats.effect.std.{Queue, Supervisor}
import cats.syntax.all.*
import fs2.{Chunk, Stream}
import weir.{Interruptible, Pipeline, Running, Source, Summary, TaskOutcome, Tracked}

import scala.concurrent.duration.FiniteDuration

/**
 * A durable queue kept in memory, whose items are acknowledged, handed back, refused or interrupted as
 * weir-postgres's claims and weir-kafka's records are: for tests of code that runs pipelines over such a
 * source, and the example of `docs/sources.md` ("Writing a source"), written against weir-core's public
 * API alone. Each item a run hands out is a [[weir.Tracked]] item, which keeps its life.
 *
 * {{{
 * InMemorySource[IO, String].flatMap { queue =>
 *   queue.enqueue("a", "b") *>
 *     queue.start(source => Pipeline(source).process(item => send(item.value))).use(_.drain(5.seconds))
 * }
 * }}}
 *
 * What becomes of an item handed out, by its outcome in the pipeline, once the source has read it:
 *   - it ran to an outcome (succeeded, or failed for good under the pipeline's policy): acknowledged, for
 *     good ([[acknowledged]]);
 *   - it never started (drained, released, failed fast) or refused, or was interrupted: back at the end of
 *     the queue, for a later run; an interrupted one counts one more [[InMemorySource.Item.attempt]].
 *
 * [[cancel]] interrupts an item that runs and refuses one that has not started; [[withdraw]] refuses its
 * start, or its next attempt's, and lets an attempt that runs end. A run's release gives back every item
 * whose outcome it had not read: uncounted if it never started, counted if it may have run.
 *
 * Concurrency: every method may be called from any fiber; several runs may take from one queue at once.
 * Memory: every value not acknowledged, and the acknowledged ones (for the tests to read).
 */
final class InMemorySource[F[_], A] private (book: Ref[F, InMemorySource.Book[A]], wake: Queue[F, Unit])(using
    F: Async[F]
):
  import InMemorySource.*

  /** Adds `values` at the end of the queue; returns their ids, in order. */
  def enqueue(values: A*): F[Vector[Long]] = book.modify(_.add(values.toVector)) <* wake.offer(())

  /** The values waiting in the queue, in its order. */
  def available: F[Vector[A]] = book.get.map(b => b.queue.map(b.values(_).value))

  /** The values acknowledged, in the order their outcomes were read. */
  def acknowledged: F[Vector[A]] = book.get.map(_.acknowledged)

  /** Interrupts the item `id` if it runs, refuses it if it has not started: true if it was handed out. */
  def cancel(id: Long, reason: String): F[Boolean] = stop(id)(_.interrupt(reason))

  /** Refuses the start of the item `id`, or of its next attempt: true if it was handed out. */
  def withdraw(id: Long, reason: String): F[Boolean] = stop(id)(_.refuse(reason))

  private def stop(id: Long)(event: Tracked => Tracked.Stop): F[Boolean] =
    book.get.flatMap(b =>
      F.delay(b.held.get(id).exists(item =>
        event(item.life) match
          case Tracked.Stop.Already | Tracked.Stop.TooLate => false
          case _ => true
      ))
    )

  /**
   * Starts the pipeline `build` makes from this queue: it hands out what the queue holds, in order, and then
   * what is enqueued while it runs, until it is drained ([[InMemorySource.Run.drain]]) or released.
   */
  def start[B](build: Source[F, Item[A]] => Pipeline[F, Item[A], B]): Resource[F, Run[F, A]] =
    for
      run <- Resource.eval(F.unique)
      stopped <- Resource.eval(Deferred[F, Unit])
      // released last, once the reader has read every outcome: what the run never returned goes back
      _ <- Resource.onFinalize(giveBack(run))
      // released after the pipeline, whose release ends its outcomes: the reader reads them all
      readers <- Supervisor[F](await = true)
      started <- build(Source.refusable(handOut(run, stopped))).startWithOutcomes
      (running, outcomes) = started
      _ <- Resource.eval(readers.supervise(outcomes.chunks.evalMap(settle).compile.drain))
    yield new Run[F, A]:
      val pipeline: Running[F, Item[A]] = running
      def drain(deadline: FiniteDuration): F[Summary[Item[A]]] =
        // the drain is requested before the stream ends, or that end would complete the run
        F.uncancelable(_ => running.requestDrain(deadline) *> stopped.complete(()).void) *> running.join

  // the queue's items, as many as it holds at each pull, until the run is stopped
  private def handOut(run: Unique.Token, stopped: Deferred[F, Unit]): Stream[F, Item[A]] =
    val next: F[Option[Chunk[Item[A]]]] =
      stopped.tryGet.flatMap {
        case Some(_) => F.pure(None)
        case None =>
          book.modify(_.holdAll(run)).flatMap(items =>
            // a wake-up lost to the race only makes the next pull look again
            if items.isEmpty then F.race(stopped.get, wake.take).as(Some(items)) else F.pure(Some(items))
          )
      }
    Stream.repeatEval(next).unNoneTerminate.unchunks

  // each outcome ends its item's life; the book then keeps what each end means, and the item is finished
  private def settle(outcomes: Chunk[TaskOutcome[Item[A], Any]]): F[Unit] =
    F.delay(outcomes.filter(o => o.task.life.done(o)).map(_.task)).flatMap(ended =>
      book.update(b => ended.foldLeft(b)(_.settle(_))) *> F.delay(ended.foreach(_.life.finish(): Unit)) *>
        wake.offer(())
    )

  // a run's last step: every item it still holds goes back, counted if it may have run
  private def giveBack(run: Unique.Token): F[Unit] =
    book.get.flatMap(b =>
      F.delay(b.held.values.toVector.filter(_.run == run).map(item =>
        item -> (!item.life.handBack() && item.life.state.mayHaveRun)
      ))
    ).flatMap(items =>
      book.update(b => items.foldLeft(b)((b, i) => b.putBack(i._1, counted = i._2))) *>
        F.delay(items.foreach(_._1.life.finish(): Unit)) *> wake.offer(())
    )

object InMemorySource:

  /** An empty queue. */
  def apply[F[_], A](using F: Async[F]): F[InMemorySource[F, A]] =
    (F.ref(Book[A](0L, Vector.empty, Map.empty, Map.empty, Vector.empty)), Queue.dropping[F, Unit](1))
      .mapN((book, wake) => new InMemorySource(book, wake))

  /**
   * A value handed to a pipeline: its `id` in the queue, and which `attempt` this is (1, plus one for each
   * earlier run in which it may have run). Its start and interruption are its [[weir.Tracked]] life's.
   */
  final class Item[+A] private[InMemorySource] (
      val id: Long,
      val value: A,
      val attempt: Int,
      private[InMemorySource] val run: Unique.Token
  ) extends Interruptible:
    private[InMemorySource] val life = new Tracked
    def tryStart(): Option[String] = life.start()
    def onInterrupt(interrupt: String => Unit): () => Unit = life.onInterrupt(interrupt)
    override def toString: String = s"Item($id, attempt $attempt, $value)"

  /** A run of the queue: its pipeline, and its drain. */
  trait Run[F[_], A]:
    /** The pipeline, to change its limit or watch it. Stop it with [[drain]]. */
    def pipeline: Running[F, Item[A]]

    /**
     * Stops handing out items and drains the pipeline: running items get `deadline`, the others end not
     * started and go back. Cancelling the call stops the wait, not the drain.
     */
    def drain(deadline: FiniteDuration): F[Summary[Item[A]]]

  /** What the queue holds: the order of the waiting ids, every value not acknowledged, the handed out. */
  private final case class Book[A](
      next: Long,
      queue: Vector[Long],
      values: Map[Long, Stored[A]],
      held: Map[Long, Item[A]],
      acknowledged: Vector[A]
  ):
    def add(vs: Vector[A]): (Book[A], Vector[Long]) =
      val ids = vs.indices.toVector.map(next + _)
      (
        copy(next = next + vs.size, queue = queue ++ ids, values = values ++ ids.zip(vs.map(Stored(_, 0)))),
        ids
      )

    def holdAll(run: Unique.Token): (Book[A], Chunk[Item[A]]) =
      val items = queue.map(id => new Item(id, values(id).value, values(id).ran + 1, run))
      (copy(queue = Vector.empty, held = held ++ items.map(i => i.id -> i)), Chunk.from(items))

    // what the end of an item means here: ran, acknowledged; any other, back, counted if interrupted
    def settle(item: Item[A]): Book[A] =
      item.life.state match
        case Tracked.State.Ending(Tracked.End.Ran) =>
          copy(values = values - item.id, held = held - item.id, acknowledged = acknowledged :+ item.value)
        case state => putBack(item, counted = state.mayHaveRun)

    def putBack(item: Item[A], counted: Boolean): Book[A] =
      val stored = values(item.id)
      copy(
        queue = queue :+ item.id,
        values = values.updated(item.id, if counted then stored.copy(ran = stored.ran + 1) else stored),
        held = held - item.id
      )

  /** A value waiting or handed out, and how many runs it may have run in without being acknowledged. */
  private final case class Stored[A](value: A, ran: Int)
