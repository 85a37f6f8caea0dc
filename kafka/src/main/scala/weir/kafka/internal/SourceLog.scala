package weir.kafka.internal

import cats.effect.kernel.{Async, Ref, Resource}
import cats.syntax.all.*
import org.apache.kafka.common.TopicPartition
import org.typelevel.log4cats.{LoggerFactory, SelfAwareStructuredLogger}
import weir.{Service, Streak}

import scala.concurrent.duration.*

/**
 * Where a source logs, through the user's `LoggerFactory`: `weir.kafka.consumer` for its partitions and
 * commits, `weir.kafka.deadLetters` for its dead letters; each line starts with the group, which its
 * context carries too (`weir.group`). What the poller did is logged off its thread, after its round
 * ([[events]]). Nothing is logged per record above DEBUG.
 */
private[kafka] final class SourceLog[F[_]] private (
    group: String,
    deadLetterTopic: Option[String],
    consumer: SelfAwareStructuredLogger[F],
    deadLetters: SelfAwareStructuredLogger[F],
    commits: Streak[F],
    counters: Counters
)(using F: Async[F]):
  import Poller.Event

  private val context = Map("weir.group" -> group)
  private val prefix = s"group '$group'"
  private val topic = deadLetterTopic.fold("")(t => s"'$t'")

  /** Logs what the poller did, in order. */
  def events(happened: Vector[Event]): F[Unit] = happened.traverse_ {
    case Event.Assigned(ps) =>
      consumer.info(context)(s"$prefix: partitions assigned: ${SourceLog.show(ps)}")
    case Event.Revoked(ps, interrupted) =>
      consumer.info(context)(
        s"$prefix: partitions revoked, their finished records committed: ${SourceLog.show(ps)}" +
          (if interrupted > 0 then s" ($interrupted running record(s) interrupted)" else "")
      )
    case Event.Lost(ps, interrupted) =>
      consumer.warn(context)(
        s"$prefix: partitions lost, another consumer has them already (this one missed a rebalance): " +
          s"${SourceLog.show(ps)} ($interrupted running record(s) interrupted, to run again there)"
      )
    case Event.Committed => commits.succeeded
    case Event.CommitFailed(e) => commits.failed(e)
    case Event.DeadLettered(tp, offset, e) => deadLettered(tp, offset, "undecodable", e)
  }

  /** A record written to the dead-letter topic (DEBUG: one line per record; see [[summaries]]). */
  def deadLettered(tp: TopicPartition, offset: Long, why: String, error: Throwable): F[Unit] =
    deadLetters.debug(context, error)(s"$prefix: $tp@$offset ($why) written to the dead-letter topic $topic")

  /** A dead-letter write that spent its attempts: the source fails with `error` (ERROR, once). */
  def deadLetterFailed(error: Throwable): F[Unit] =
    deadLetters.error(context, error)(s"$prefix: the source fails: ${error.getMessage}")

  /**
   * Every `every`, and once more on release, how many records were written to the dead-letter topic since
   * the last summary (WARN), if any were: a periodic [[weir.Service]] (`summaries`).
   */
  def summaries(every: FiniteDuration): Resource[F, Unit] =
    def since(last: Ref[F, Long]): F[Unit] =
      F.delay(counters.deadLettered.get).flatMap(now => last.getAndSet(now).map(now - _)).flatMap(n =>
        deadLetters.warn(context)(
          s"$prefix: $n record(s) written to the dead-letter topic $topic since the last summary " +
            s"(at most $every ago; each one at DEBUG)"
        ).whenA(n > 0)
      )
    if deadLetterTopic.isEmpty then Resource.unit[F]
    else
      Resource.make(Ref.of[F, Long](0L))(since).flatMap(last =>
        Service.periodic(
          Service.Settings.periodic("summaries", every),
          Service.Faults.ignored[F]
        )(since(last))
      )

private[kafka] object SourceLog:

  /** How often a source sums up its dead letters. */
  val summaryEvery: FiniteDuration = 1.minute

  /** Partitions as `topic-0, topic-1`, sorted. */
  def show(ps: Iterable[TopicPartition]): String =
    ps.toVector.sortBy(tp => (tp.topic, tp.partition)).mkString(", ")

  def apply[F[_]](
      factory: LoggerFactory[F],
      group: String,
      deadLetterTopic: Option[String],
      counters: Counters
  )(
      using F: Async[F]
  ): F[SourceLog[F]] =
    val consumer = factory.getLoggerFromName("weir.kafka.consumer")
    val context = Map("weir.group" -> group)
    Streak[F](
      began = e =>
        consumer.warn(context, e)(
          s"group '$group': committing offsets failed (retried at the next commit; logged again once one succeeds): ${e.getMessage}"
        ),
      ended = end =>
        consumer.info(context)(
          s"group '$group': committing offsets succeeded again after ${end.errors} failure(s) over ${end.lasted.toMillis} ms"
        )
    ).map(new SourceLog(
      group,
      deadLetterTopic,
      consumer,
      factory.getLoggerFromName("weir.kafka.deadLetters"),
      _,
      counters
    ))
