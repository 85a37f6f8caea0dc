package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import fs2.{Chunk, Stream}
import weir.{Service, TaskOutcome}
import weir.postgres.{Job, WorkerConfig}

/**
 * Reads a worker's outcomes from its pipeline, a chunk at a time, and queues each claim's finish in the
 * completer: one queue operation for all the outcomes the pipeline has ready. Each claim's end is known
 * before its finish is queued, so before it can commit (see [[Claims]]). A [[weir.Service]] (`outcomes`)
 * whose one round reads the stream to its end.
 */
private[postgres] object OutcomeReader:

  /**
   * One round, to the stream's end; a release asks the pipeline to end (`finish`) and gives the reader
   * `releaseGrace` to read what it hands out, then stops it.
   */
  def settings(config: WorkerConfig): Service.Settings =
    Service.Settings(
      name = "outcomes",
      every = config.pollInterval,
      backoff = Service.Backoff.constant(config.pollInterval),
      finishWithin = config.releaseGrace
    )

  /**
   * The reader of `outcomes`, queueing into `completer` what each outcome makes of its claim (`answer`
   * reads the handler's values, see [[Finish.of]]); its release runs `finish`, which ends the stream.
   */
  def resource[F[_], A, B](
      worker: WorkerContext,
      completer: Completer[F],
      answer: B => Finish.Answer
  )(outcomes: Stream[F, TaskOutcome[Job[A], B]], finish: F[Unit])(using F: Async[F]): Resource[F, Unit] =
    val service = settings(worker.config)
    val read = outcomes.chunks.evalMap(os =>
      F.delay(worker.counters.refused.addAndGet(ended(os))) *>
        completer.submitAll(os.map(Finish.of(worker.config, answer, _)))
    ).compile.drain
    // nothing of a round fails but a defect: then the stream is read again, after a poll interval
    Service.finishing(service, Service.Faults.ignored[F], finish)(read.as(Service.Next.Done))

  /** Ends the claim of each outcome with it; returns how many of them the engine refused to start. */
  private def ended[A, B](outcomes: Chunk[TaskOutcome[Job[A], B]]): Long =
    var refused = 0L
    outcomes.foreach { o =>
      o.task.life.done(o): Unit
      if Finish.refused(o) then refused += 1
    }
    refused
