package weir.lab.blocking

import cats.effect.{IO, Resource}
import cats.effect.std.{Queue, Supervisor}
import cats.syntax.all.*
import fs2.Stream
import weir.{Defaults, Limit, Pipeline}
import weir.lab.Tally

import java.util.concurrent.{Executors, TimeUnit}
import scala.concurrent.{blocking, ExecutionContext, Future}
import scala.concurrent.duration.*

/**
 * One way to run seed 003's tasks, each of which blocks its thread (`Thread.sleep`) for the same time.
 * Reimplementations of what the write-up runs (Scala `Future` on the global pool, with and without the
 * `blocking` marker, on a fixed pool of 2) and of what Cats Effect, the JDK and weir offer instead.
 */
sealed trait Approach:
  def name: String
  def summary: String

  /**
   * How many tasks it can block at once, when that is fixed by a pool (the global pool's parallelism is
   * the number of cores); `None` when it grows to every task.
   */
  def threads(cores: Int): Option[Int]

  /** Runs `tasks` tasks, each calling `body(i)` (which blocks), and ends when all are done. */
  def run(tasks: Int, body: Int => Unit): IO[Unit]

object Approach:

  /** The task body the experiment uses: counted by `tally`, blocking for `duration`. */
  def sleeper(tally: Tally, duration: FiniteDuration): Int => Unit = i =>
    tally.begin()
    Thread.sleep(java.time.Duration.ofNanos(duration.toNanos))
    tally.end(i)

  private def awaitAll(futures: => Vector[Future[Unit]]): IO[Unit] =
    IO.fromFuture(IO(Future.sequence(futures)(using implicitly, ExecutionContext.parasitic))).void

  /** `Future { body }` on Scala's global pool, no marker: at most one task per core blocks at a time. */
  case object FutureGlobal extends Approach:
    val name = "future-global"
    val summary = "Future on the global pool, no marker"
    def threads(cores: Int) = Some(cores)
    def run(tasks: Int, body: Int => Unit): IO[Unit] =
      awaitAll(Vector.tabulate(tasks)(i => Future(body(i))(using ExecutionContext.global)))

  /** `Future { blocking { body } }` on the global pool: the fork/join pool adds a thread per blocked task. */
  case object FutureGlobalBlocking extends Approach:
    val name = "future-global-blocking"
    val summary = "Future on the global pool, body in scala.concurrent.blocking"
    def threads(cores: Int) = None
    def run(tasks: Int, body: Int => Unit): IO[Unit] =
      awaitAll(Vector.tabulate(tasks)(i => Future(blocking(body(i)))(using ExecutionContext.global)))

  /** The same marker on a fixed pool of 2 threads, which does not understand it: 2 at a time. */
  case object FutureFixedBlocking extends Approach:
    val name = "future-fixed2-blocking"
    val summary = "Future on a fixed pool of 2 threads, body in scala.concurrent.blocking"
    def threads(cores: Int) = Some(2)
    def run(tasks: Int, body: Int => Unit): IO[Unit] =
      Resource.make(IO(Executors.newFixedThreadPool(2)))(p =>
        IO.blocking { p.shutdownNow(); val _ = p.awaitTermination(10, TimeUnit.SECONDS) }
      ).use { pool =>
        val ec = ExecutionContext.fromExecutorService(pool)
        awaitAll(Vector.tabulate(tasks)(i => Future(blocking(body(i)))(using ec)))
      }

  /** A fiber per task, each shifting to Cats Effect's blocking pool with `IO.blocking`. */
  case object IoBlocking extends Approach:
    val name = "io-blocking"
    val summary = "a fiber per task, body in IO.blocking (Cats Effect's blocking pool)"
    def threads(cores: Int) = None
    def run(tasks: Int, body: Int => Unit): IO[Unit] = (0 until tasks).toList.parTraverse_(i =>
      IO.blocking(body(i))
    )

  /**
   * The same with `IO.interruptible`, which is what weir's `processBlocking` runs the handler in (the
   * thread can be interrupted on cancellation): isolates weir's own cost from the mechanism's.
   */
  case object IoInterruptible extends Approach:
    val name = "io-interruptible"
    val summary = "a fiber per task, body in IO.interruptible (Cats Effect's blocking pool, interruptible)"
    def threads(cores: Int) = None
    def run(tasks: Int, body: Int => Unit): IO[Unit] = (0 until tasks).toList.parTraverse_(i =>
      IO.interruptible(body(i))
    )

  /** A virtual thread per task: `Thread.sleep` unmounts it, its carrier runs the next one. */
  case object VirtualThreads extends Approach:
    val name = "virtual-threads"
    val summary = "a JDK virtual thread per task"
    def threads(cores: Int) = None
    def run(tasks: Int, body: Int => Unit): IO[Unit] =
      Resource.make(IO(Executors.newVirtualThreadPerTaskExecutor()))(e =>
        IO.blocking { e.shutdownNow(); val _ = e.awaitTermination(10, TimeUnit.SECONDS) }
      ).use { executor =>
        IO.interruptible {
          val futures = Vector.tabulate(tasks)(i => executor.submit((() => body(i)): Runnable))
          futures.foreach(_.get())
        }
      }

  /**
   * FS2's own way to run a stream's elements concurrently, unordered and without a limit, each in
   * `IO.interruptible`: the same source as weir's row, with FS2's machinery between it and the tasks.
   */
  case object Fs2ParEval extends Approach:
    val name = "fs2-par-eval"
    val summary = "Stream.range(...).parEvalMapUnorderedUnbounded(IO.interruptible(body))"
    def threads(cores: Int) = None
    def run(tasks: Int, body: Int => Unit): IO[Unit] =
      Stream.range(0, tasks).covary[IO].parEvalMapUnorderedUnbounded(i =>
        IO.interruptible(body(i))
      ).compile.drain

  /**
   * The shape of weir's run built from Cats Effect's parts and nothing else: a producer fiber pulls the
   * same `Stream.range` into a bounded `Queue` (weir's default capacity) and one worker fiber per task takes
   * from it, running the body in `IO.interruptible`. What any design with a producer, a buffer and workers
   * pays, next to a fiber per element of a list already in memory (`io-interruptible`).
   */
  case object CeQueueWorkers extends Approach:
    val name = "ce-queue-workers"
    val summary = "a producer fiber into a bounded Queue, a worker fiber per task, body in IO.interruptible"
    def threads(cores: Int) = None
    def run(tasks: Int, body: Int => Unit): IO[Unit] =
      Queue.bounded[IO, Option[Int]](Defaults.bufferCapacity).flatMap { queue =>
        feed(queue, tasks)(IO.unit).both(queueWorker(queue, body).parReplicateA_(tasks)).void
      }

  /**
   * The producer of the two queue rows: offers the ids of the same `Stream.range` as weir's row, runs `each`
   * after every offer, then offers one `None` per task, one for each worker there will be.
   */
  private def feed(queue: Queue[IO, Option[Int]], tasks: Int)(each: IO[Unit]): IO[Unit] =
    Stream.range(0, tasks).covary[IO].evalMap(i => queue.offer(Some(i)) *> each).compile.drain *>
      queue.offer(None).replicateA_(tasks)

  /** A worker of the two queue rows: runs each id it takes in `IO.interruptible`, until it takes `None`. */
  private def queueWorker(queue: Queue[IO, Option[Int]], body: Int => Unit): IO[Unit] =
    queue.take.flatMap {
      case Some(i) => IO.interruptible(body(i)) *> queueWorker(queue, body)
      case None => IO.unit
    }

  /**
   * [[CeQueueWorkers]] with its workers started on demand, as weir's pool grows: the producer starts a
   * worker (under a `Supervisor`) for each element it offers, so no worker exists before it has a task.
   */
  case object CeQueueOnDemand extends Approach:
    val name = "ce-queue-on-demand"
    val summary = "a producer fiber into a bounded Queue, starting a worker fiber per element it offers"
    def threads(cores: Int) = None
    def run(tasks: Int, body: Int => Unit): IO[Unit] =
      Queue.bounded[IO, Option[Int]](Defaults.bufferCapacity).flatMap { queue =>
        Supervisor[IO](await = true).use { workers =>
          feed(queue, tasks)(workers.supervise(queueWorker(queue, body)).void)
        }
      }

  /** weir with a blocking handler (`processBlocking`, Cats Effect's blocking pool), no limit. */
  case object WeirBlocking extends Approach:
    val name = "weir-blocking"
    val summary = "weir Pipeline.processBlocking, Limit.unbounded"
    def threads(cores: Int) = None
    def run(tasks: Int, body: Int => Unit): IO[Unit] =
      Pipeline(Stream.range(0, tasks).covary[IO])
        .processBlocking(body)
        .withLimit(Limit.unbounded)
        .run
        .flatMap(s =>
          IO.raiseUnless(s.allSucceeded)(new IllegalStateException(s"weir did not run every task: $s"))
        )

  /** In the write-up's order (the unmarked global pool first, before the marker has added threads). */
  val all: Vector[Approach] =
    Vector(
      FutureGlobal,
      FutureGlobalBlocking,
      FutureFixedBlocking,
      IoBlocking,
      IoInterruptible,
      VirtualThreads,
      Fs2ParEval,
      CeQueueWorkers,
      CeQueueOnDemand,
      WeirBlocking
    )
