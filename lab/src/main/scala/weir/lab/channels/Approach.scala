package weir.lab.channels

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import fs2.Stream
import fs2.concurrent.Channel
import weir.{Limit, Pipeline}

import java.util.concurrent.{Executors, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

/**
 * One way to run the channel experiment's tasks (seed 001). Each is a reimplementation on Cats Effect,
 * FS2 or plain JDK threads of a design the write-up measures, or weir itself; `limit` is how many tasks
 * it runs at once (`None`: all of them), which decides its ideal.
 */
sealed trait Approach:
  def name: String
  def summary: String
  def limit: Option[Int]

  /** Whether it only uses effects (no platform thread blocked), so it can run under `TestControl`. */
  def effectOnly: Boolean = true

  /** Runs every task of `work` once, then ends. */
  def run(work: Work): IO[Unit]

object Approach:

  /**
   * Every task started at once; each writes its id into one unbounded channel when done, and a single
   * reader counts what arrives until the writers close the channel (the write-up's channel version).
   */
  case object ChannelAll extends Approach:
    val name = "channel"
    val summary = "start all, results through one unbounded fs2 Channel, one reader"
    val limit = None
    def run(work: Work): IO[Unit] =
      Channel.unbounded[IO, Int].flatMap { channel =>
        val writers = (0 until work.size).toList.parTraverse_(i => work.task(i) *> channel.send(i).void) *>
          channel.close.void
        val reader = channel.stream.compile.fold(0)((n, _) => n + 1)
        writers.both(reader).flatMap { (_, received) =>
          IO.raiseUnless(received == work.size)(
            new IllegalStateException(s"the reader got $received results, expected ${work.size}")
          )
        }
      }

  /**
   * A parallel loop on `k` platform threads, each taking the next task and blocking in `Thread.sleep`
   * for its delay (the write-up's `Parallel.For` with a degree of parallelism of 4).
   */
  final case class BlockingLoop(k: Int) extends Approach:
    require(k > 0, s"threads must be > 0, was: $k")
    val name = s"parallel-for@$k"
    val summary = s"$k platform threads take tasks in order and block in Thread.sleep"
    val limit = Some(k)
    override def effectOnly = false
    def run(work: Work): IO[Unit] =
      val pool = Resource.make(IO(Executors.newFixedThreadPool(k)))(p =>
        IO.blocking { p.shutdownNow(); val _ = p.awaitTermination(10, TimeUnit.SECONDS) }
      )
      pool.use { p =>
        IO.interruptible {
          val next = new AtomicInteger(0)
          val worker: Runnable = () =>
            var i = next.getAndIncrement()
            while i < work.size do
              work.blockingTask(i)
              i = next.getAndIncrement()
          val futures = Vector.fill(k)(p.submit(worker))
          futures.foreach(_.get())
        }
      }

  /**
   * An asynchronous bounded loop: at most `k` tasks at once, taken in order, each started as soon as a
   * slot frees (`parEvalMapUnordered(k)`, the write-up's `Parallel.ForEachAsync`). `label` names the
   * write-up's "default", the number of cores.
   */
  final case class AsyncLoop(k: Int, label: String) extends Approach:
    require(k > 0, s"parallelism must be > 0, was: $k")
    val name = s"async-loop@$label"
    val summary = s"fs2 parEvalMapUnordered($k): at most $k sleeping tasks at once"
    val limit = Some(k)
    def run(work: Work): IO[Unit] =
      Stream.range(0, work.size).covary[IO].parEvalMapUnordered(k)(work.task).compile.drain

  /** weir: one producer, `Limit.unbounded` or `Limit.fixed(k)`, unordered. */
  final case class Weir(k: Option[Int]) extends Approach:
    k.foreach(n => require(n > 0, s"limit must be > 0, was: $n"))
    val name = k.fold("weir-unbounded")(n => s"weir@$n")
    val summary = s"weir Pipeline, ${k.fold("Limit.unbounded")(n => s"Limit.fixed($n)")}"
    val limit = k
    def run(work: Work): IO[Unit] =
      Pipeline(Stream.range(0, work.size).covary[IO])
        .process(work.task)
        .withLimit(k.fold(Limit.unbounded)(Limit.fixed))
        .run
        .flatMap(s =>
          IO.raiseUnless(s.allSucceeded)(new IllegalStateException(s"weir did not run every task: $s"))
        )

  /** The write-up's line-up, then weir; "default" is the number of cores. */
  def all(cores: Int): Vector[Approach] = Vector(
    ChannelAll,
    BlockingLoop(4),
    AsyncLoop(4, "4"),
    AsyncLoop(40, "40"),
    AsyncLoop(cores, s"default($cores)"),
    Weir(None),
    Weir(Some(4)),
    Weir(Some(40))
  )
