package weir.runtime.hang

import cats.effect.IO
import cats.effect.std.{Queue, Semaphore}
import cats.effect.unsafe.{IORuntime, IORuntimeConfig}
import cats.syntax.all.*
import fs2.Stream
import weir.runtime.WeirRuntime
import weir.{Limit, Pipeline}

import java.util.concurrent.{TimeUnit, TimeoutException}
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * A liveness probe for typelevel/cats-effect#4674 (see [[weir.runtime.WeirRuntime]]): repeats a timer-heavy
 * run back to back on one runtime and reports whether a run ever exceeds its deadline.
 *
 * {{{
 * java --sun-misc-unsafe-memory-access=allow -cp <test classpath> weir.runtime.hang.HangProbe \
 *   <runtime: default|weir|wstp1> <shape: queue|semaphore|weir> <runs> <perRunTimeoutMillis>
 * }}}
 *
 * Every run is [[Tasks]] tasks of `IO.sleep(1.milli)` with [[Workers]] of them in flight:
 *   - `queue`: [[Workers]] worker fibers draining a bounded `cats.effect.std.Queue`;
 *   - `semaphore`: one fiber per task, [[Workers]] permits of a `Semaphore`;
 *   - `weir`: the same work through weir's engine, `Limit.fixed(1000)`.
 *
 * Runtimes: `default` is `IORuntime.global`; `weir` is [[weir.runtime.WeirRuntime]]; `wstp1` is the default
 * work-stealing pool with a single compute thread (an alternative measured for ADR 0003).
 *
 * The deadline is watched from the JVM's main thread with `CompletableFuture.get(timeout)`, never from
 * inside the runtime under test, which may be wedged. Stdout gets exactly one outcome line:
 *   - `OK runs=<n> ms=<total>`, exit code 0;
 *   - `WEDGED run=<k>` (1-based), exit code 3, as soon as run `k` misses its deadline; the stacks of the
 *     compute threads that were running then go to stderr (lines starting with `STACK`);
 *   - `FAILED run=<k> <reason>`, exit code 4, when a run completes wrongly or fails.
 *
 * Stderr also gets one progress line per run. Exit code 2 is a usage error.
 */
object HangProbe:

  val Workers: Int = 1000
  val Tasks: Int = 10000
  private val Nap: FiniteDuration = 1.milli

  def main(args: Array[String]): Unit =
    args.toList match
      case List(rt, shape, runs, timeout) =>
        (runtimeNamed(rt), shapeNamed(shape), runs.toIntOption, timeout.toLongOption) match
          case (Some(makeRuntime), Some(run), Some(n), Some(millis)) if n > 0 && millis > 0 =>
            val (runtime, _) = makeRuntime()
            probe(runtime, run, n, millis)
          case _ => usage(s"bad arguments: ${args.mkString(" ")}")
      case _ => usage(s"expected 4 arguments, got ${args.length}")

  private def usage(problem: String): Nothing =
    System.err.println(
      s"$problem\nusage: HangProbe <default|weir|wstp1> <queue|semaphore|weir> <runs> <perRunTimeoutMillis>"
    )
    halt(2)

  /** Runs `run` `runs` times on `runtime`; never returns (prints the outcome and ends the JVM). */
  private def probe(runtime: IORuntime, run: IO[Long], runs: Int, timeoutMillis: Long): Nothing =
    val started = System.nanoTime()
    (1 to runs).foreach { k =>
      val t0 = System.nanoTime()
      val future = run.unsafeToCompletableFuture()(using runtime)
      val completed =
        try Right(future.get(timeoutMillis, TimeUnit.MILLISECONDS))
        catch
          case _: TimeoutException =>
            dumpComputeThreads()
            println(s"WEDGED run=$k")
            halt(3)
          case e: Exception => Left(e.toString)
      completed match
        case Right(done) if done == Tasks.toLong =>
          System.err.println(s"run=$k ok ms=${(System.nanoTime() - t0) / 1000000}")
        case Right(done) =>
          println(s"FAILED run=$k completed $done of $Tasks tasks")
          halt(4)
        case Left(error) =>
          println(s"FAILED run=$k $error")
          halt(4)
    }
    println(s"OK runs=$runs ms=${(System.nanoTime() - started) / 1000000}")
    halt(0)

  // halt, not exit: a wedged runtime must not be able to hold the JVM up in a shutdown hook
  private def halt(code: Int): Nothing =
    System.out.flush()
    System.err.flush()
    Runtime.getRuntime.halt(code)
    throw new IllegalStateException("unreachable")

  private def dumpComputeThreads(): Unit =
    Thread.getAllStackTraces.asScala.toList
      .filter((t, _) => t.getName.contains("compute") && t.getState == Thread.State.RUNNABLE)
      .foreach { (t, frames) =>
        System.err.println(s"STACK ${t.getName} ${t.getState}")
        frames.take(12).foreach(f => System.err.println(s"STACK   at $f"))
      }

  private def runtimeNamed(name: String): Option[() => (IORuntime, () => Unit)] =
    name match
      case "default" => Some(() => (IORuntime.global, () => ()))
      case "weir" => Some(() => WeirRuntime.unsafeCreate())
      case "wstp1" => Some(() => singleThreadPool())
      case _ => None

  private def shapeNamed(name: String): Option[IO[Long]] =
    name match
      case "queue" => Some(queueShape)
      case "semaphore" => Some(semaphoreShape)
      case "weir" => Some(weirShape)
      case _ => None

  /** The default pool (its own timers included) with one compute thread: nothing to steal from. */
  private def singleThreadPool(): (IORuntime, () => Unit) =
    val (pool, _, shutdownPool) = IORuntime.createWorkStealingComputeThreadPool(threads = 1)
    val runtime = IORuntime.builder().setCompute(pool, shutdownPool).setConfig(IORuntimeConfig()).build()
    (runtime, () => runtime.shutdown())

  /** [[Workers]] fibers take from a bounded queue until each gets the end marker; returns tasks done. */
  private val queueShape: IO[Long] =
    val end = -1
    for
      queue <- Queue.bounded[IO, Int](Workers)
      done <- IO.ref(0L)
      worker = queue.take.flatMap(i =>
        if i == end then IO.pure(false) else IO.sleep(Nap) *> done.update(_ + 1).as(true)
      )
      produce = (0 until Tasks).toList.traverse_(queue.offer) *>
        List.fill(Workers)(end).traverse_(queue.offer)
      _ <- (produce, List.fill(Workers)(worker.iterateWhile(identity)).parSequence_).parTupled
      n <- done.get
    yield n

  /** One fiber per task, [[Workers]] permits; returns tasks done. */
  private val semaphoreShape: IO[Long] =
    for
      permits <- Semaphore[IO](Workers.toLong)
      done <- IO.ref(0L)
      _ <- (0 until Tasks).toList.parTraverse_(_ =>
        permits.permit.surround(IO.sleep(Nap)) *> done.update(_ + 1)
      )
      n <- done.get
    yield n

  /** The same work through weir's engine; returns the tasks that succeeded. */
  private val weirShape: IO[Long] =
    Pipeline(Stream.range(0, Tasks).covary[IO])
      .process(_ => IO.sleep(Nap))
      .withLimit(Limit.fixed(Workers))
      .run
      .map(_.succeeded)
