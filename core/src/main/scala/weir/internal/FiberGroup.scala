package weir.internal

import cats.Parallel
import cats.effect.instances.spawn.parallelForGenSpawn
import cats.effect.kernel.{Async, Fiber, Outcome as FiberOutcome}
import cats.syntax.all.*

import java.util.concurrent.ConcurrentHashMap

/**
 * Owns the fibers it starts, and cancels them all when it is closed: what `cats.effect.std.Supervisor`
 * does for the engine's workers and producers, with less per fiber: a run may start as many workers as
 * its limit, and a `Supervisor` keeps a map of fibers in a `Ref`, updated as each starts and ends, with a
 * token and a flag per fiber. Here a member is an entry in a concurrent set and a finalizer that removes
 * it. Why and what it saves: ADR 0014.
 *
 * Closing and starting may race. The group is closed by a flag written before the members are read; a
 * start adds its member before it reads the flag, and publishes the fiber before it reads the flag again.
 * Both are volatile accesses, so one of the two sides always sees the other: either `close` finds the fiber
 * and cancels it, or `start` sees the group closed and cancels (or never starts) it itself.
 */
private[weir] final class FiberGroup[F[_]] private ()(using F: Async[F]):
  import FiberGroup.Member

  private given Parallel[F] = parallelForGenSpawn[F, Throwable]

  private val members = ConcurrentHashMap.newKeySet[Member[F]]()
  @volatile private var closed = false

  /**
   * Starts `fa` in a fiber owned by this group; false, and nothing started, once the group is closed.
   *
   * Not cancelable (the fiber is registered or not started at all). A fiber that starts as the group closes
   * is cancelled here, and this waits for its end. `fa`'s errors are its own: they end its fiber, which the
   * group then forgets. Concurrent callers are allowed.
   */
  def start[A](fa: F[A]): F[Boolean] = startThen(fa)(_ => F.unit)

  /**
   * [[start]], and `finalizer` runs when the fiber ends, however it ends (if it ran at all: see [[close]]),
   * once the fiber has left the group. The group's own finalizer and the caller's are one, where a
   * `guaranteeCase` of the caller's around `fa` would wrap the fiber's work in a second. So a [[close]] that
   * runs while `finalizer` does no longer finds that fiber and does not wait for it: `finalizer` must be
   * safe to finish after the group closed (the pool's count-out is: once killed it ignores late leaves).
   * `started` is told the fiber once it started (and possibly after it ended).
   */
  def startThen[A](fa: F[A], started: Fiber[F, Throwable, A] => Unit = (_: Fiber[F, Throwable, A]) => ())(
      finalizer: FiberOutcome[F, Throwable, A] => F[Unit]
  ): F[Boolean] =
    F.uncancelable { _ =>
      F.defer {
        val member = new Member[F]
        members.add(member)
        if closed then
          members.remove(member)
          F.pure(false)
        else
          F.start(F.guaranteeCase(fa)(outcome => F.delay(members.remove(member)) *> finalizer(outcome)))
            .flatMap { fiber =>
              member.fiber = Some(fiber)
              started(fiber)
              if closed then fiber.cancel.as(true) else F.pure(true)
            }
      }
    }

  /**
   * Closes the group: nothing starts in it any more, and every fiber still running is cancelled, all at once;
   * completes when each has ended (its finalizers run), except a fiber whose [[start]] is still under way
   * (that start cancels it and waits for it instead) and one already out of the group, still running the
   * finalizer given to [[startThen]]. A fiber cancelled before it ever ran ends without
   * running anything, finalizers included. Not cancelable. Idempotent; concurrent callers are allowed and
   * each waits.
   */
  def close: F[Unit] =
    F.uncancelable { _ =>
      F.defer {
        closed = true
        val fibers = members.toArray(Array.empty[Member[F]]).toList.flatMap(_.fiber)
        if fibers.isEmpty then F.unit else fibers.parTraverse_(_.cancel)
      }
    }

  /** Fibers started and not yet known to have ended (for tests). */
  def size: Int = members.size

private[weir] object FiberGroup:
  private final class Member[F[_]]:
    @volatile var fiber: Option[Fiber[F, Throwable, ?]] = None

  /** An open group, to be closed by its owner. A plain call, for building a run's parts in one effect. */
  def unsafe[F[_]: Async]: FiberGroup[F] = new FiberGroup[F]
