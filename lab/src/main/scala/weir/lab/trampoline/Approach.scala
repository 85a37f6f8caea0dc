package weir.lab.trampoline

import cats.effect.IO
import cats.effect.unsafe.IORuntime

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration.*

/**
 * One way to compute [[Ackermann]] (seed 004): plain recursion, `Future` with a pool hop per step, and
 * three Cats Effect `IO` encodings. Each runs synchronously from the measuring thread and returns the
 * value.
 */
sealed trait Approach:
  def name: String
  def summary: String

  /** Computes `A(m, n)`, waiting for the result on the calling thread. */
  def compute(m: Int, n: Int, runtime: IORuntime): Int

object Approach:

  /** Plain recursion on the calling thread: the baseline, until the stack runs out. */
  case object Plain extends Approach:
    val name = "plain"
    val summary = "plain recursion on the calling thread (overflows its stack when deep)"
    def compute(m: Int, n: Int, runtime: IORuntime): Int = Ackermann.plain(m, n)

  /**
   * `Future` with a pool hop per step: every call is `Future.delegate` (submitted to the pool) and every
   * inner result continues in `flatMap` (submitted again). Scala's global pool.
   */
  case object FutureHop extends Approach:
    val name = "future"
    val summary = "Future, every step submitted to the global pool"
    def ack(m: Int, n: Int)(using ec: ExecutionContext): Future[Int] =
      Future.delegate {
        if m == 0 then Future.successful(n + 1)
        else if n == 0 then ack(m - 1, 1)
        else ack(m, n - 1).flatMap(inner => ack(m - 1, inner))
      }
    def compute(m: Int, n: Int, runtime: IORuntime): Int =
      Await.result(ack(m, n)(using ExecutionContext.global), 10.minutes)

  /** `IO`, every step suspended (`IO.defer`): Cats Effect's run loop is the trampoline, on one thread. */
  case object IoTrampoline extends Approach:
    val name = "io"
    val summary = "IO, every step suspended with IO.defer (the run loop trampolines)"
    def ack(m: Int, n: Int): IO[Int] =
      IO.defer {
        if m == 0 then IO.pure(n + 1)
        else if n == 0 then ack(m - 1, 1)
        else ack(m, n - 1).flatMap(inner => ack(m - 1, inner))
      }
    def compute(m: Int, n: Int, runtime: IORuntime): Int = ack(m, n).unsafeRunSync()(using runtime)

  /** `IO` with an explicit shift per step (`IO.cede`: back to the pool's queue), the `Future` hop's analogue. */
  case object IoCede extends Approach:
    val name = "io-cede"
    val summary = "IO, every step preceded by IO.cede (a reschedule on the pool)"
    def ack(m: Int, n: Int): IO[Int] =
      IO.cede *> IO.defer {
        if m == 0 then IO.pure(n + 1)
        else if n == 0 then ack(m - 1, 1)
        else ack(m, n - 1).flatMap(inner => ack(m - 1, inner))
      }
    def compute(m: Int, n: Int, runtime: IORuntime): Int = ack(m, n).unsafeRunSync()(using runtime)

  /**
   * `IO` that builds steps by direct calls and suspends only when `maxDepth` direct calls are nested
   * (after the write-up's "optimized" variant: count the depth, jump on the trampoline only when deep).
   */
  final case class IoDepth(maxDepth: Int) extends Approach:
    require(maxDepth > 0, s"max depth must be > 0, was: $maxDepth")
    val name = "io-depth"
    val summary = s"IO, direct calls, suspended with IO.defer only every $maxDepth nested calls"
    // suspended, so that even the first direct calls run on the pool, not on the caller's stack
    def ack(m: Int, n: Int): IO[Int] = IO.defer(go(m, n, 0))
    private def go(m: Int, n: Int, depth: Int): IO[Int] =
      if m == 0 then IO.pure(n + 1)
      else if n == 0 then next(m - 1, 1, depth)
      else next(m, n - 1, depth).flatMap(inner => next(m - 1, inner, depth))
    private def next(m: Int, n: Int, depth: Int): IO[Int] =
      if depth >= maxDepth then IO.defer(go(m, n, 0)) else go(m, n, depth + 1)
    def compute(m: Int, n: Int, runtime: IORuntime): Int = ack(m, n).unsafeRunSync()(using runtime)

  def all(maxDepth: Int): Vector[Approach] = Vector(Plain, FutureHop, IoTrampoline, IoCede, IoDepth(maxDepth))
