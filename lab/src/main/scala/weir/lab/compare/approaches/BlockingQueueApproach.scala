package weir.lab.compare.approaches

import cats.effect.IO
import cats.syntax.all.*
import fs2.Stream
import fs2.concurrent.SignallingRef

import java.util.concurrent.LinkedBlockingQueue

/**
 * The write-up's approach 2 (`BlockingQueueApp`): a bounded `java.util.concurrent.LinkedBlockingQueue`
 * (capacity: the workload's buffer) between one producer and one consuming stream, `put` and `take` called
 * in plain `IO(...)`, so a full or empty queue blocks a compute thread, as in the write-up.
 *
 * Under `--clock virtual` the runtime has a single thread, so a real blocking call would freeze it (and the
 * virtual clock with it): there a blocked thread is modelled by a fiber that waits until the queue changes
 * and tries again, which has the same timing and blocks nothing. [[BlockingDeadlockApproach]] shows what
 * real blocking does on a small pool.
 */
object BlockingQueueApproach extends Approach:
  val name = "blocking-queue"
  val summary = "a bounded java.util.concurrent blocking queue between one producer and the consumers"
  override def blocksThreads: Boolean = true

  def run(bench: Bench): IO[Unit] =
    IO(new LinkedBlockingQueue[Option[Int]](bench.workload.buffer)).flatMap { queue =>
      ops(bench.clock, queue).flatMap { (put, take) =>
        (
          (bench.producer.map(Some(_)) ++ Stream.emit(None)).evalMap(put).compile.drain,
          Stream.repeatEval(
            take
          ).unNoneTerminate.through(bench.ordered(bench.consume)).compile.drain
        ).parTupled.void
      }
    }

  /** `put` and `take`: really blocking in real time, a parked fiber in virtual time. */
  private[approaches] def ops[A](clock: Clock, queue: LinkedBlockingQueue[A]): IO[(A => IO[Unit], IO[A])] =
    clock match
      case Clock.Real => IO.pure((a => IO(queue.put(a)), IO(queue.take())))
      case Clock.Virtual =>
        // a version bumped on every change; read it before trying, wait for it to move when the try fails
        SignallingRef[IO, Long](0L).map { changes =>
          def put(a: A): IO[Unit] =
            changes.get.flatMap { v =>
              IO(queue.offer(a)).ifM(changes.update(_ + 1), changes.waitUntil(_ != v) *> put(a))
            }
          lazy val take: IO[A] =
            changes.get.flatMap { v =>
              IO(Option(queue.poll())).flatMap {
                case Some(a) => changes.update(_ + 1).as(a)
                case None => changes.waitUntil(_ != v) *> take
              }
            }
          (put, take)
        }
