package weir.lab.soak

import cats.effect.IO
import cats.syntax.all.*
import weir.lab.kafka.LabBroker
import weir.postgres.{Enqueued, NewTask, TaskAdmin, TaskQueue}

import scala.concurrent.duration.*

/**
 * The soak run's feeders: each sends task `i` once the feed has run `i / rate` seconds, in a batch every
 * tick, so that a slow batch is caught up by the next rather than lowering the rate. Each returns how
 * many tasks it sent.
 */
object Feed:

  private val tick = 100.millis

  /** A cancel of a running task, sent this long after it was enqueued (it runs for 2 s). */
  private val cancelRunningAfter = 500.millis

  /**
   * Paces `send(from, until)` over `[0, duration)`: at each tick, the tasks due by then; then returns the
   * count. `send` is given at most a second's worth at once.
   */
  private def paced(rate: Int, duration: FiniteDuration)(send: (Long, Long) => IO[Unit]): IO[Long] =
    IO.monotonic.flatMap { start =>
      val total = (rate.toLong * duration.toMillis) / 1000
      def loop(sent: Long): IO[Long] =
        if sent >= total then IO.pure(sent)
        else
          IO.monotonic.flatMap { now =>
            val due = math.min(total, (rate.toLong * (now - start).toMillis) / 1000)
            val until = math.min(due, sent + rate)
            val batch = if until > sent then send(sent, until) else IO.unit
            batch *> IO.sleep(tick) *> loop(until)
          }
      loop(0)
    }

  /** Durable tasks, enqueued in batches; cancels those [[SoakTask]] says are cancelled. */
  def durable(
      queue: TaskQueue[IO, Long],
      admin: TaskAdmin[IO],
      rate: Int,
      keys: Int,
      duration: FiniteDuration
  )
      : IO[Long] =
    IO.ref(Vector.empty[(FiniteDuration, Long)]).flatMap { running =>
      val cancelDue = IO.monotonic.flatMap(now =>
        running.modify(_.partition(_._1 <= now).swap).flatMap(due =>
          admin.tasks.cancelMany(due.map(_._2), "soak: cancelled while it runs").whenA(due.nonEmpty)
        )
      )
      paced(rate, duration) { (from, until) =>
        val tasks = (from until until).map { i =>
          val kind = SoakTask.kind(i)
          NewTask(
            payload = i,
            orderingKey = Some(s"k${i % keys}"),
            maxAttempts = SoakTask.maxAttempts(kind),
            // a task to cancel before it runs waits long enough for the cancel
            delay = if kind == SoakTask.Kind.Cancelled then 10.seconds else Duration.Zero
          )
        }
        for
          enqueued <- queue.enqueueMany(tasks)
          ids = tasks.zip(enqueued).collect { case (t, Enqueued.Inserted(id)) =>
            (SoakTask.kind(t.payload), id)
          }
          _ <- admin.tasks.cancelMany(
            ids.collect { case (SoakTask.Kind.Cancelled, id) => id },
            "soak: cancelled before it runs"
          )
          now <- IO.monotonic
          _ <- running.update(_ ++ ids.collect { case (SoakTask.Kind.Long, id) =>
            (now + cancelRunningAfter, id)
          })
          _ <- cancelDue
        yield ()
      } <* (IO.sleep(cancelRunningAfter) *> cancelDue)
    }

  /** Kafka records `k<i mod keys>` → `i`, produced in batches, each waiting for its acknowledgements. */
  def kafka(broker: LabBroker, topic: String, rate: Int, keys: Int, duration: FiniteDuration): IO[Long] =
    paced(rate, duration)((from, until) =>
      broker.send(topic, (from until until).map(i => (s"k${i % keys}", i.toString)))
    )
