package weir.postgres.internal

import cats.syntax.all.*
import doobie.*
import org.postgresql.util.PSQLException
import weir.postgres.{BatchClosed, BatchId, BatchProgress, Enqueued, Schema, UnknownBatch}

import java.time.Instant
import scala.util.Try

/**
 * An enqueue into a batch (see [[weir.postgres.Batches]]), in the caller's transaction: the batch is read in
 * the transaction's snapshot (unknown or closed: an error before anything is written), the members inserted,
 * then counted under the batch's lock by the schema's `batch_step`, which fails the statement, and so the
 * transaction, when a close committed in between: a closed batch never gains a member, even when the caller
 * catches the error and commits.
 */
private[postgres] object BatchEnqueue:

  /** `insert`, the members' insert (its answers, an `Inserted` per member), checked and counted. */
  def apply(
      sql: BatchSql,
      batch: BatchId,
      insert: ConnectionIO[Vector[Enqueued]]
  ): ConnectionIO[Vector[Enqueued]] =
    val program =
      for
        now <- sql.progress(batch).flatMap(found(sql.schema, batch))
        _ <- now.closedAt.fold(FC.unit)(at => FC.raiseError[Unit](new BatchClosed(batch, at)))
        results <- insert
        added = results.count(_.isInstanceOf[Enqueued.Inserted]).toLong
        _ <- if added == 0L then FC.unit
        else sql.step(batch, added, close = false).flatMap(found(sql.schema, batch))
      yield results
    program.adaptError(Function.unlift((e: Throwable) => closedMeanwhile(batch, e)))

  /** `row`, or [[UnknownBatch]] when there is none. */
  def found(schema: Schema, batch: BatchId)(row: Option[BatchProgress]): ConnectionIO[BatchProgress] =
    row.fold(FC.raiseError(new UnknownBatch(batch, schema)))(FC.pure)

  /** The count's refusal (its SQLSTATE, and its detail: when the batch was closed) as [[BatchClosed]]. */
  private def closedMeanwhile(batch: BatchId, e: Throwable): Option[Throwable] =
    e match
      case p: PSQLException if p.getSQLState == BatchSql.closedState =>
        Option(p.getServerErrorMessage).flatMap(m => Option(m.getDetail))
          .flatMap(detail => Try(Instant.parse(detail)).toOption)
          .map(at => new BatchClosed(batch, at))
      case _ => None
