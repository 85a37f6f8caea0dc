package weir

import cats.Applicative
import cats.syntax.functor.*
import fs2.{Chunk, Stream}

/**
 * Where tasks come from: one or more producers, each a `Stream`, run concurrently. Each producer feeds
 * the pipeline's bounded buffer directly, so producers never wait for one another and never wait for
 * the workers beyond the buffer's capacity.
 *
 * A task is ''received'' once a producer has handed it to the buffer; from then on it ends in exactly
 * one [[TaskOutcome]]. A producer stops pulling from its stream when the pipeline drains or fails fast; a
 * pull that is still in progress when a drain's deadline passes is cancelled, and elements that stream
 * had not yet emitted are never received.
 */
final class Source[F[_], +A] private (
    val producers: Vector[Stream[F, A]],
    private[weir] val refusable: Boolean = false,
    problems: List[String] = Nil
):

  /**
   * What is wrong with how this source was built (no producers, a partition count below 1), each value
   * named; empty when it is valid. A pipeline over a bad source fails to start with an [[InvalidSettings]]
   * listing these.
   */
  def errors: List[String] = problems

  /** Runs this source's producers and `other`'s side by side (the tasks of a refusable one still refuse). */
  def merge[A2 >: A](other: Source[F, A2]): Source[F, A2] =
    new Source(producers ++ other.producers, refusable || other.refusable, problems ++ other.errors)

  override def toString: String = s"Source(${producers.size} producer(s))"

object Source:

  /** One producer. */
  def apply[F[_], A](stream: Stream[F, A]): Source[F, A] = new Source(Vector(stream))

  /**
   * One producer whose tasks may refuse to start: each is asked for its [[Refusable.tryStart]] just before
   * it would start, and one that refuses ends not started ([[NotStartedReason.Refused]]). Those of its
   * tasks that are also [[Interruptible]] can be interrupted while they run. A source built otherwise
   * never asks, and pays nothing for it.
   */
  def refusable[F[_], A <: Refusable](stream: Stream[F, A]): Source[F, A] = new Source(Vector(stream), true)

  /** Several producers (at least one, checked when a run starts), run concurrently, interleaved in the buffer. */
  def concurrent[F[_], A](streams: Stream[F, A]*): Source[F, A] =
    new Source(
      streams.toVector,
      problems = Validation.check(streams.nonEmpty, "a concurrent source needs at least one producer, was: 0")
    )

  /**
   * `n` producers, the `i`-th given by `producer(i)` for `i` in `0 until n` (the shape of a
   * partitioned table or topic); `n` > 0, checked when a run starts.
   */
  def partitioned[F[_], A](n: Int)(producer: Int => Stream[F, A]): Source[F, A] =
    new Source(
      Vector.tabulate(math.max(n, 0))(producer),
      problems = Validation.check(n > 0, s"number of partitions must be > 0, was: $n")
    )

  /**
   * A database-style producer: `fetch(cursor)` returns one page of tasks and the cursor of the next page
   * (`None` when there is none). The next page is fetched while the previous one is still being
   * processed, as long as the buffer has room.
   */
  def paged[F[_]: Applicative, A, C](first: C)(fetch: C => F[Page[A, C]]): Source[F, A] =
    Source(
      Stream.unfoldChunkEval[F, Option[C], A](Some(first)) {
        case None => Applicative[F].pure(None)
        case Some(cursor) => fetch(cursor).map(page => Some((page.tasks, page.next)))
      }
    )

/** One page of a [[Source.paged]] source. */
final case class Page[+A, +C](tasks: Chunk[A], next: Option[C])
