package weir.bench

import cats.effect.IO
import cats.effect.std.Queue
import fs2.{Chunk, Stream}
import org.openjdk.jmh.annotations.*
import weir.{Interruptible, Interruption, Limit, Pipeline, Source, TaskOrder}
import weir.bench.Workload.*

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * weir's per-task cost when tasks arrive in bursts for a pool of idle workers, the shape of a Kafka
 * consumer's polls: the producer hands the engine a chunk of [[BurstBench.Burst]] tasks and the next one
 * only once the outcome stream has read the previous one's outcomes, so each burst reaches workers that
 * found the buffer empty and parked. Per key ([[BurstBench.Keys]] keys), under a limit as large as a
 * burst, a no-op handler, and the outcomes read in chunks, as weir-kafka's source reads them.
 *
 * `tasks`: `plain` tasks (integers), `interruptible` ones on a refusable source (each attempt runs
 * against the task's interruption, as every Kafka record's and durable job's does), or `timeout`: plain
 * tasks under a task timeout that none reaches ([[BurstBench.Timeout]]), so each attempt runs against a
 * deadline.
 *
 * Run (from the repository root):
 * {{{
 * ./weir bench 'weir.bench.BurstBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class BurstBench extends OnWeirRuntime:
  import BurstBench.*

  @Param(Array("plain", "interruptible", "timeout"))
  var tasks: String = scala.compiletime.uninitialized

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopBursts(): Long =
    unsafeRun(tasks match
      case "plain" => plain
      case "interruptible" => interruptible
      case _ => timed)

  private val plain: IO[Long] = run[Int](i => i, i => i % Keys, Source(_), timeout = None)

  private val interruptible: IO[Long] =
    run[Task](new Task(_), _.key, s => Source.refusable(s), timeout = None)

  private val timed: IO[Long] = run[Int](i => i, i => i % Keys, Source(_), timeout = Some(Timeout))

  /*
   * The producer's queue gets the first burst at once and each next one when the outcome reader has read
   * as many outcomes as were handed out, so no two bursts overlap.
   */
  private def run[A](
      make: Int => A,
      key: A => Int,
      source: Stream[IO, A] => Source[IO, A],
      timeout: Option[FiniteDuration]
  ): IO[Long] =
    Queue.unbounded[IO, Option[Chunk[A]]].flatMap { queue =>
      def burst(n: Int): IO[Unit] =
        if n * Burst >= Tasks then queue.offer(None)
        else queue.offer(Some(Chunk.from((n * Burst until (n + 1) * Burst).map(make))))
      val untimed = Pipeline(source(Stream.fromQueueNoneTerminatedChunk(queue)))
        .process(_ => IO.unit)
        .withLimit(Limit.fixed(Burst))
        .withOrder(TaskOrder.byKey(key))
      val pipeline = timeout.fold(untimed)(untimed.withTaskTimeout)
      burst(0) *> pipeline.startWithOutcomes.use { (_, outcomes) =>
        outcomes.chunks
          .evalScan(0L) { (seen, os) =>
            val now = seen + os.size
            // a burst's last outcome read: the next burst
            (if now % Burst == 0 then burst((now / Burst).toInt) else IO.unit).as(now)
          }
          .compile
          .lastOrError
      }
    }

object BurstBench:
  /** Tasks per burst, and the limit: a Kafka consumer's `max.poll.records`. */
  final val Burst = 500
  final val Tasks = 100 * Burst
  final val Keys = 400

  /** The task timeout of the `timeout` bursts: far longer than a no-op takes, so no attempt reaches it. */
  val Timeout: FiniteDuration = 1.minute

  /** A task that can be interrupted and refused, neither of which happens here. */
  final class Task(i: Int) extends Interruptible:
    val key: Int = i % Keys
    private val interruption = new Interruption
    def tryStart(): Option[String] = interruption.requested
    def onInterrupt(interrupt: String => Unit): () => Unit = interruption.onInterrupt(interrupt)
