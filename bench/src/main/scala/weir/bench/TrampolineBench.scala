package weir.bench

import cats.effect.IO
import org.openjdk.jmh.annotations.*

import java.util.concurrent.TimeUnit
import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration.*

/**
 * Seed 004's comparison (`./weir lab trampoline`'s companion): the Ackermann function A(2, n) computed by
 * plain recursion (the baseline: no effect at all), by `Future` with a pool hop per step, by `IO` suspended
 * at every step (the run loop trampolines), by `IO` with an `IO.cede` per step, and by `IO` that suspends
 * only every [[TrampolineBench.MaxDepth]] nested direct calls. The score is µs per computation; A(2, 30)
 * takes 2015 steps (calls), A(2, 100) 20,705. The implementations are the lab's
 * (`lab/src/main/scala/weir/lab/trampoline/Approach.scala`), repeated here because `bench` does not
 * depend on `lab`.
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.TrampolineBench'
 * ./weir bench 'weir.bench.TrampolineBench' -p n=10,30,100
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(Workload.JvmFlags))
class TrampolineBench extends OnWeirRuntime:
  import TrampolineBench.*

  /** The second argument of A(2, n). */
  @Param(Array("30"))
  var n: Int = scala.compiletime.uninitialized

  @Benchmark
  def plain(): Int = Ack.plain(2, n)

  @Benchmark
  def future(): Int = Await.result(Ack.future(2, n)(using ExecutionContext.global), 1.minute)

  @Benchmark
  def io(): Int = unsafeRun(Ack.io(2, n))

  @Benchmark
  def ioCede(): Int = unsafeRun(Ack.ioCede(2, n))

  @Benchmark
  def ioDepth(): Int = unsafeRun(IO.defer(Ack.ioDepth(2, n, 0)))

object TrampolineBench:
  /** io-depth: direct calls nested before it suspends (the lab's default). */
  final val MaxDepth = 512

  private object Ack:
    def plain(m: Int, n: Int): Int =
      if m == 0 then n + 1
      else if n == 0 then plain(m - 1, 1)
      else plain(m - 1, plain(m, n - 1))

    def future(m: Int, n: Int)(using ec: ExecutionContext): Future[Int] =
      Future.delegate {
        if m == 0 then Future.successful(n + 1)
        else if n == 0 then future(m - 1, 1)
        else future(m, n - 1).flatMap(inner => future(m - 1, inner))
      }

    def io(m: Int, n: Int): IO[Int] =
      IO.defer {
        if m == 0 then IO.pure(n + 1)
        else if n == 0 then io(m - 1, 1)
        else io(m, n - 1).flatMap(inner => io(m - 1, inner))
      }

    def ioCede(m: Int, n: Int): IO[Int] =
      IO.cede *> IO.defer {
        if m == 0 then IO.pure(n + 1)
        else if n == 0 then ioCede(m - 1, 1)
        else ioCede(m, n - 1).flatMap(inner => ioCede(m - 1, inner))
      }

    def ioDepth(m: Int, n: Int, depth: Int): IO[Int] =
      if m == 0 then IO.pure(n + 1)
      else if n == 0 then next(m - 1, 1, depth)
      else next(m, n - 1, depth).flatMap(inner => next(m - 1, inner, depth))

    private def next(m: Int, n: Int, depth: Int): IO[Int] =
      if depth >= MaxDepth then IO.defer(ioDepth(m, n, 0)) else ioDepth(m, n, depth + 1)
