package weir.postgres.internal

import cats.effect.kernel.Sync
import cats.syntax.all.*
import org.typelevel.log4cats.Logger

import java.util.concurrent.atomic.AtomicLong

/**
 * The faults an operator's action rides out on a [[weir.postgres.Database]], outside any worker: each one
 * counted (read by [[weir.postgres.Database.stats]]) and logged once, at WARN, on the logger
 * [[ActionFaults.loggerName]]. One per `Database`; the count only grows.
 */
private[postgres] final class ActionFaults[F[_]](logger: Logger[F])(using F: Sync[F]):

  private val deadlocks = new AtomicLong

  /**
   * `action`'s run `attempt` was aborted by the server as a deadlock (`e`, or a cause of it), and it is run
   * again; the line gives the first line of the server's message.
   */
  def deadlockRetried(action: String, attempt: Int, e: Throwable): F[Unit] =
    val said = Deadlocks.serverError(e).getOrElse(e)
    F.delay(deadlocks.incrementAndGet()) *>
      logger.warn(
        s"$action was aborted by the server as a deadlock (run $attempt of ${Deadlocks.Attempts}) and is run " +
          s"again: ${Option(said.getMessage).flatMap(_.linesIterator.nextOption()).getOrElse(said.getClass.getName)}"
      )

  /** How many runs of actions the server aborted as deadlocks, each run again. */
  def deadlocksRetried: F[Long] = F.delay(deadlocks.get)

private[postgres] object ActionFaults:

  /** The logger of the faults operators' actions ride out. */
  val loggerName: String = "weir.postgres.actions"
