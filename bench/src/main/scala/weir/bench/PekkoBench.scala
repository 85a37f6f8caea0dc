package weir.bench

import com.typesafe.config.ConfigFactory
import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.pattern.after
import org.apache.pekko.stream.Materializer
import org.apache.pekko.stream.scaladsl.{Sink, Source}
import org.openjdk.jmh.annotations.*
import weir.bench.Workload.*

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*
import scala.concurrent.{Await, ExecutionContext, Future}

/**
 * Pekko Streams 1.2: `mapAsyncUnordered` at the same concurrency as weir, with
 *   - `Completed`: an already-completed `Future` per task (no effect runs at all: the stage's own cost);
 *   - `Hop`: a `Future` run on the actor system's dispatcher (a thread hop per task, like an effect).
 * The sleep workload completes each future from Pekko's scheduler (`pattern.after`), with the scheduler's
 * tick set to 1 ms (its finest; the default 10 ms tick would round every 1 ms sleep up to 10 ms).
 * Baselines: `map` (the same stream, one task at a time, no future); ten 1 ms `after`s in a row.
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.PekkoBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class PekkoBench:
  private var system: ActorSystem = scala.compiletime.uninitialized
  private var materializer: Materializer = scala.compiletime.uninitialized

  @Setup(Level.Trial)
  def startSystem(): Unit =
    val config = ConfigFactory
      .parseString("pekko.scheduler.tick-duration = 1ms\npekko.loglevel = WARNING")
      .withFallback(ConfigFactory.load())
    system = ActorSystem("bench", config)
    materializer = Materializer(system)

  @TearDown(Level.Trial)
  def stopSystem(): Unit =
    val _ = Await.result(system.terminate(), 30.seconds)

  private def await[A](f: Future[A]): A = Await.result(f, 5.minutes)

  private def source(n: Int): Source[Int, ?] = Source(0 until n)

  private def sleep(i: Int): Future[Int] =
    after(SleepMillis.millis)(Future.successful(i))(using system)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopMapAsyncUnorderedCompleted(): Unit =
    val _ = await(source(Tasks).mapAsyncUnordered(Concurrency)(Future.successful).runWith(Sink.ignore)(using
      materializer
    ))

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopMapAsyncUnorderedHop(): Unit =
    given ExecutionContext = system.dispatcher
    val _ = await(source(Tasks).mapAsyncUnordered(Concurrency)(i => Future(i)).runWith(Sink.ignore)(using
      materializer
    ))

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopMap(): Unit =
    val _ = await(source(Tasks).map(identity).runWith(Sink.ignore)(using materializer))

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepMapAsyncUnordered(): Unit =
    val _ = await(source(SleepTasks).mapAsyncUnordered(SleepConcurrency)(sleep).runWith(Sink.ignore)(using
      materializer
    ))

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(): Unit =
    given ExecutionContext = system.dispatcher
    val _ = await((0 until SequentialSleeps).foldLeft(Future.successful(0))((f, _) => f.flatMap(sleep)))
