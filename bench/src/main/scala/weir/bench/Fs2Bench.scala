package weir.bench

import cats.effect.IO
import fs2.{Pull, Stream}
import org.openjdk.jmh.annotations.*
import weir.bench.Workload.*

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * fs2 3.14: `parEvalMapUnordered` and `parEvalMap` at the same concurrency as weir, fed by `Stream.range`
 * (one element per chunk), and `parEvalMapUnordered` fed one chunk of all tasks; `evalMap` is the
 * sequential baseline (the same stream, one task at a time); `sourcePull` and `sourceByElement` are the
 * stream alone, read the two ways weir's producer reads it (by chunks, then, after a run of one-element
 * chunks, element by element). For the sleep workload, the baseline is ten 1 ms sleeps in a row on the
 * same runtime.
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.Fs2Bench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class Fs2Bench extends OnWeirRuntime:

  private val noop: Int => IO[Unit] = _ => IO.unit
  private val sleep: Int => IO[Unit] = _ => IO.sleep(SleepMillis.millis)

  private def source(n: Int): Stream[IO, Int] = Stream.range(0, n).covary[IO]

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopParEvalMapUnordered(): Unit =
    unsafeRun(source(Tasks).parEvalMapUnordered(Concurrency)(noop).compile.drain)

  // the same tasks handed over as one chunk, as `WeirBench.noopUnorderedOneChunk` gets them: the comparison
  // with the same source on both sides
  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopParEvalMapUnorderedOneChunk(): Unit =
    unsafeRun(Stream.emits(0 until Tasks).covary[IO].parEvalMapUnordered(Concurrency)(noop).compile.drain)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopParEvalMap(): Unit = unsafeRun(source(Tasks).parEvalMap(Concurrency)(noop).compile.drain)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopEvalMap(): Unit = unsafeRun(source(Tasks).evalMap(noop).compile.drain)

  // the source alone, pulled chunk by chunk as weir's producer pulls a stream's first chunks, nothing done with
  // them: the floor under anything that reads `Stream.range` by `uncons`
  @Benchmark
  @OperationsPerInvocation(Tasks)
  def sourcePull(): Unit =
    def go(s: Stream[IO, Int]): Pull[IO, Nothing, Unit] =
      s.pull.uncons.flatMap {
        case Some((_, rest)) => go(rest)
        case None => Pull.done
      }
    unsafeRun(go(source(Tasks)).stream.compile.drain)

  // the source alone, read element by element as weir's producer reads a stream of one-element chunks
  @Benchmark
  @OperationsPerInvocation(Tasks)
  def sourceByElement(): Unit =
    unsafeRun(
      source(Tasks).flatMap(_ => Stream.empty.covaryAll[IO, Boolean]).takeWhile(identity).compile.drain
    )

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepParEvalMapUnordered(): Unit =
    unsafeRun(source(SleepTasks).parEvalMapUnordered(SleepConcurrency)(sleep).compile.drain)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepParEvalMap(): Unit =
    unsafeRun(source(SleepTasks).parEvalMap(SleepConcurrency)(sleep).compile.drain)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(): Unit = unsafeRun(Sequential.io(SequentialSleeps, sleep))
