package weir.postgres

import cats.syntax.traverse.*

/**
 * A task that a dependent waited for, as the dependent's [[Job.parents]] reads it: its id, its state now
 * (`completed`, `dead` or `cancelled` for a parent that ended and kept its row; a live state if an operator
 * retried it since; `None` when its row is gone: pruned, or completed without `keepCompleted` and without
 * a result by a worker before migration 14, which keeps the row of a task that others wait for), and its
 * result, the JSON its handler completed it with under
 * [[DurableWorker.startRecording]], kept as long as its row.
 */
final case class Parent(id: Long, state: Option[TaskState], result: Option[String]):

  /**
   * The result decoded as `R`: `Right(None)` when the parent stored none (see above), `Left` with the
   * decoder's error when it does not decode as `R`.
   */
  def resultAs[R](using codec: PayloadCodec[R]): Either[Throwable, Option[R]] = result.traverse(codec.decode)
