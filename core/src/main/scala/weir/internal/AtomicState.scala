package weir.internal

import cats.effect.kernel.Sync

import java.util.concurrent.atomic.AtomicReference
import scala.annotation.tailrec

/**
 * The current state of a state machine: an immutable value swapped by compare-and-set, like `Ref`, and
 * with `Ref`'s effectful `get`, `modify` and `update`. Unlike `Ref` it also offers the same operations as
 * plain calls ([[now]], [[modifyNow]]), so that the engine's hot path can fuse several state changes and
 * counter updates into one `F.delay` instead of one effect per step (ADR 0012).
 *
 * `modifyNow`'s function may run more than once under contention, exactly like `Ref.modify`'s: it must be
 * pure, and the effects it describes must be run by the caller after it returns.
 */
private[weir] final class AtomicState[F[_], S](initial: S)(using F: Sync[F]):
  private val ref = new AtomicReference[S](initial)

  /** The current state, read now (to be called inside an effect). */
  def now: S = ref.get()

  /** Applies `f` atomically now and returns its result (to be called inside an effect). */
  @tailrec def modifyNow[B](f: S => (S, B)): B =
    val seen = ref.get()
    val (next, result) = f(seen)
    if ref.compareAndSet(seen, next) then result else modifyNow(f)

  /**
   * Replaces `expected` (a state read with [[now]]) by `next` if it is still the current state; false if
   * another change came first (then read again and retry). For a hot path whose change and result are
   * computed without the tuple [[modifyNow]] allocates.
   */
  def compareAndSetNow(expected: S, next: S): Boolean = ref.compareAndSet(expected, next)

  def get: F[S] = F.delay(ref.get())
  def modify[B](f: S => (S, B)): F[B] = F.delay(modifyNow(f))
  def update(f: S => S): F[Unit] = F.delay(modifyNow(s => (f(s), ())))
