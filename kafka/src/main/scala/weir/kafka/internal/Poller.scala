package weir.kafka.internal

import org.apache.kafka.clients.consumer.{
  CloseOptions,
  ConsumerRebalanceListener,
  ConsumerRecord,
  KafkaConsumer,
  OffsetAndMetadata
}
import org.apache.kafka.common.{KafkaException, TopicPartition}
import org.apache.kafka.common.serialization.Deserializer
import weir.Interruptible
import weir.kafka.{KafkaRecord, KafkaSettings}

import java.time.Duration as JDuration
import java.util.Collection as JCollection
import scala.collection.mutable
import scala.jdk.CollectionConverters.*
import scala.util.control.NonFatal

/**
 * The consumer's owner. A `KafkaConsumer` is not thread-safe, so every method here runs on the source's one
 * poller thread, and so do the rebalance callbacks, which the consumer calls from inside `poll`: `owned`
 * and `lastCommitted` are confined to that thread. What other threads touch is the partitions' states
 * (see [[PartitionState]]) and the counters.
 *
 * A revoke runs inside `poll` and blocks this thread while the revoked partitions' running records finish
 * (up to the grace, then they are interrupted and given as long again to end): the partition is handed on
 * only when the callback returns, so this wait is what keeps one key from running on two consumers. The
 * other partitions' records go on meanwhile; only polling waits.
 */
private[kafka] final class Poller[K, V](
    consumer: KafkaConsumer[Array[Byte], Array[Byte]],
    settings: KafkaSettings,
    keys: Deserializer[K],
    values: Deserializer[V],
    deadLetters: Option[DeadLetters],
    counters: Counters
) extends ConsumerRebalanceListener:

  private val owned = mutable.HashMap.empty[TopicPartition, PartitionState]
  private val lastCommitted = mutable.HashMap.empty[TopicPartition, (Long, String)]
  private val pollTimeout = JDuration.ofNanos(settings.pollTimeout.toNanos)
  private val commitEveryNanos = settings.commitEvery.toNanos
  private val graceNanos = settings.revokeGrace.toNanos
  private val endOffsetsTimeout = JDuration.ofNanos(math.min(commitEveryNanos, 1000000000L))
  private var nextCommit = System.nanoTime() + commitEveryNanos
  private var closing = false

  // set by a drain, from any thread, or by a failure: from then on no record is handed out and every
  // partition stays paused, while the consumer stays in its group and goes on committing
  @volatile private var stopped = false

  // the first failure of a dead-letter write on this thread (see `writeDeadLetter`)
  @volatile private var failure: Option[Throwable] = None

  // what happened on this thread since the last `events()`, for the source to log off it: at most a few per
  // round (a rebalance's callbacks, a commit, the undecodable records of one poll)
  private val happened = mutable.ArrayBuffer.empty[Poller.Event]

  /** What happened since the last call, in order (see [[Poller.Event]]); poller thread only. */
  def events(): Vector[Poller.Event] =
    val out = happened.toVector
    happened.clear()
    out

  def subscribe(): Unit = consumer.subscribe(settings.topics.asJava, this)

  def stop(): Unit = stopped = true

  /** Why the poller stopped handing out records on its own, if it did: the source is to fail with it. */
  def failed: Option[Throwable] = failure

  /**
   * One round: pauses every partition while the source holds `maxInFlight` records, its unread outcomes
   * included (or is stopped), and resumes them otherwise, polls (which runs the rebalance callbacks),
   * decodes what came, and commits the finished prefixes when they are due. Returns the records to hand to
   * the pipeline, in offset order per partition: those decoded before a failure ([[failed]]), if one came.
   */
  def round(): Vector[KafkaRecord[K, V] & Interruptible] =
    if stopped || counters.held.get + counters.unread.get >= settings.maxInFlight then
      val assigned = consumer.assignment()
      if !assigned.isEmpty then consumer.pause(assigned)
      counters.paused.set(true)
    else
      val toResume = consumer.paused()
      if !toResume.isEmpty then consumer.resume(toResume)
      counters.paused.set(false)
    val polled = consumer.poll(pollTimeout)
    val out = Vector.newBuilder[KafkaRecord[K, V] & Interruptible]
    // records of a partition assigned inside this poll may come before the next round pauses it
    if !stopped then
      polled.partitions.forEach { tp =>
        owned.get(tp).foreach(state =>
          polled.records(tp).forEach(r => if !stopped then receive(state, r).foreach(out += _))
        )
      }
    val paused = consumer.paused()
    publishEndOffsets(paused)
    if System.nanoTime() - nextCommit >= 0 then
      commit(owned.values)
      counters.commitRounds.incrementAndGet(): Unit
      refreshEndOffsets(paused)
      nextCommit = System.nanoTime() + commitEveryNanos
    out.result()

  /**
   * The end offsets of the owned partitions that are fetched, from what the last fetch said (the consumer's
   * position plus its lag to the high watermark, both local): nothing is asked of the broker.
   */
  private def publishEndOffsets(paused: java.util.Set[TopicPartition]): Unit =
    owned.keysIterator.foreach { tp =>
      if !paused.contains(tp) then
        val lag = consumer.currentLag(tp)
        if lag.isPresent then
          try counters.endOffsets.put(tp, consumer.position(tp, JDuration.ZERO) + lag.getAsLong): Unit
          catch case _: KafkaException => ()
    }

  /**
   * A paused partition is not fetched, so its end offset would stay what the last fetch saw while records
   * keep coming: once per commit round, the broker is asked for the paused ones' (one request, on this
   * thread, for at most a second; one that fails leaves the last known).
   */
  private def refreshEndOffsets(paused: java.util.Set[TopicPartition]): Unit =
    val stale = owned.keysIterator.filter(paused.contains).toVector
    if stale.nonEmpty then
      try
        consumer.endOffsets(stale.asJava, endOffsetsTimeout).forEach { (tp, end) =>
          if end != null && owned.contains(tp) then counters.endOffsets.put(tp, end.longValue): Unit
        }
      catch case _: KafkaException => ()

  private def receive(state: PartitionState, r: ConsumerRecord[Array[Byte], Array[Byte]]) =
    val entry = state.receive(r.offset)
    if entry.skipped then
      counters.skipped.incrementAndGet(): Unit
      None
    else
      try
        val k = keys.deserialize(r.topic, r.headers, r.key)
        val v = values.deserialize(r.topic, r.headers, r.value)
        counters.received.incrementAndGet(): Unit
        Some(KafkaRecord(r.topic, r.partition, r.offset, r.timestamp, k, v, r.headers, r.key, r.value, entry))
      catch
        case NonFatal(e) =>
          counters.undecodable.incrementAndGet(): Unit
          deadLetters match
            case None => state.finishReceived(entry)
            case Some(dl) =>
              // written before the record counts as finished, so that its offset is never committed unwritten;
              // a write that keeps failing stops the poller, the record unfinished, and fails the source
              writeDeadLetter(dl, r, e) match
                case None =>
                  counters.deadLettered.incrementAndGet(): Unit
                  happened += Poller.Event.DeadLettered(state.partition, r.offset, e)
                  state.finishReceived(entry)
                case Some(error) =>
                  failure = Some(error)
                  stopped = true
          None

  /**
   * Writes an undecodable record, retried as [[KafkaSettings.deadLetterRetry]] says, on this thread; the
   * error that is to fail the source once the attempts are spent.
   */
  private def writeDeadLetter(
      dl: DeadLetters,
      r: ConsumerRecord[Array[Byte], Array[Byte]],
      e: Throwable
  ): Option[Throwable] =
    val retry = settings.deadLetterRetry
    @annotation.tailrec
    def attempt(n: Int): Option[Throwable] =
      val failed =
        try
          dl.send(r.topic, r.partition, r.offset, r.key, r.value, r.headers, DeadLetters.Decode, e, _ => ())
            .get(): Unit
          None
        catch
          case ee: java.util.concurrent.ExecutionException => Some(Option(ee.getCause).getOrElse(ee))
          case NonFatal(other) => Some(other)
      failed match
        case None => None
        case Some(cause) =>
          if n < retry.maxAttempts && retry.retryable(cause) then
            Thread.sleep(retry.backoff(n, java.util.concurrent.ThreadLocalRandom.current()).toMillis)
            attempt(n + 1)
          else
            counters.deadLetterFailures.incrementAndGet(): Unit
            Some(dl.failure(r.topic, r.partition, r.offset, n, cause))
    attempt(1)

  /** Commits the finished prefix of each of `states`, and the finished records above it, if they changed. */
  private def commit(states: Iterable[PartitionState]): Unit =
    val due = states.flatMap { s =>
      s.commitPoint(settings.commitMetadataBytes)
        .filter(point => !lastCommitted.get(s.partition).contains(point))
        .map(s.partition -> _)
    }.toMap
    if due.nonEmpty then
      try
        consumer.commitSync(due.map((tp, point) => tp -> new OffsetAndMetadata(point._1, point._2)).asJava)
        due.foreach { (tp, point) =>
          lastCommitted(tp) = point
          counters.committed.put(tp, point._1)
        }
        counters.commits.incrementAndGet(): Unit
        happened += Poller.Event.Committed
      catch
        // the group moved on (a rebalance, a fenced member) or the broker is away: the next commit retries,
        // and a partition lost meanwhile is re-read by its next owner from its last commit
        case e: KafkaException =>
          counters.commitFailures.incrementAndGet(): Unit
          happened += Poller.Event.CommitFailed(e)

  /**
   * New partitions: each gets its state, which skips the records its last commit's metadata names as
   * finished. Reading the commits may fail (the broker is away): the partition's records then all run.
   */
  def onPartitionsAssigned(partitions: JCollection[TopicPartition]): Unit =
    val fresh = partitions.asScala.filterNot(owned.contains).toSet
    if fresh.nonEmpty then happened += Poller.Event.Assigned(fresh.toVector)
    fresh.foreach(tp => owned(tp) = new PartitionState(tp, counters))
    if fresh.nonEmpty then
      try
        consumer.committed(fresh.asJava).forEach { (tp, om) =>
          if om != null then
            owned(tp).skipping(CommitMetadata.decode(om.offset, om.metadata))
            // the group's commit until this consumer makes one: the lag is known from the start
            counters.committed.put(tp, om.offset): Unit
        }
      catch case _: KafkaException => ()

  /**
   * The partitions go to another consumer once this returns: their unstarted records refuse from now on,
   * and so do the next attempts of those waiting for a retry; the busy ones (in an attempt, or writing
   * their dead letter) get the grace, then are interrupted and given as long again to end; and the finished
   * prefixes are committed synchronously, with the finished records above them, before the partitions are
   * released.
   */
  def onPartitionsRevoked(partitions: JCollection[TopicPartition]): Unit =
    val states = partitions.asScala.flatMap(owned.get).toVector
    if states.nonEmpty then
      counters.revoked.addAndGet(states.size.toLong): Unit
      states.foreach(_.revoke())
      var interrupted = 0
      // on close the pipeline has already ended: nothing runs any more
      if !closing then
        val deadline = System.nanoTime() + graceNanos
        states.foreach(_.awaitIdle(deadline): Unit)
        interrupted = states.map(_.interruptRunning("partition revoked")).sum
        if interrupted > 0 then
          counters.interrupted.addAndGet(interrupted.toLong): Unit
          val again = System.nanoTime() + graceNanos
          states.foreach(_.awaitIdle(again): Unit)
        // a started record that is not busy is being recorded, or waits for a retry, which the interruption
        // above ends: either outcome follows at once, and is worth a moment's wait (a record finished here
        // need not run again on the next owner)
        val settle = System.nanoTime() + Poller.SettleNanos
        states.foreach(_.awaitOutcomes(settle): Unit)
      commit(states)
      giveUp(states)
      happened += Poller.Event.Revoked(states.map(_.partition), interrupted)

  /**
   * The partitions already belong to another consumer (this one missed the rebalance): nothing can be
   * committed for them, and their running records are interrupted at once.
   */
  override def onPartitionsLost(partitions: JCollection[TopicPartition]): Unit =
    val states = partitions.asScala.flatMap(owned.get).toVector
    counters.revoked.addAndGet(states.size.toLong): Unit
    states.foreach(_.revoke())
    val interrupted = states.map(_.interruptRunning("partition lost")).sum
    counters.interrupted.addAndGet(interrupted.toLong): Unit
    giveUp(states)
    if states.nonEmpty then happened += Poller.Event.Lost(states.map(_.partition), interrupted)

  private def giveUp(states: Vector[PartitionState]): Unit =
    states.foreach { s =>
      s.release()
      owned.remove(s.partition): Unit
      lastCommitted.remove(s.partition): Unit
      counters.endOffsets.remove(s.partition): Unit
    }

  /** The last commit, then leaves the group (whose revoke commits nothing new) and closes the consumer. */
  def close(): Unit =
    closing = true
    try commit(owned.values)
    finally consumer.close(CloseOptions.timeout(JDuration.ofNanos(math.max(graceNanos, 1000000000L))))

private[kafka] object Poller:

  /** What the poller did that the source logs: never one per record, but for dead letters (at DEBUG). */
  enum Event:
    /** Partitions newly assigned to this consumer. */
    case Assigned(partitions: Vector[TopicPartition])

    /** Partitions revoked, their finished prefixes committed; `interrupted` running records interrupted. */
    case Revoked(partitions: Vector[TopicPartition], interrupted: Int)

    /** Partitions lost (another consumer has them already); `interrupted` running records interrupted. */
    case Lost(partitions: Vector[TopicPartition], interrupted: Int)

    /** A commit succeeded. */
    case Committed

    /** A commit failed (the next one retries). */
    case CommitFailed(error: Throwable)

    /** An undecodable record written to the dead-letter topic. */
    case DeadLettered(partition: TopicPartition, offset: Long, error: Throwable)

  /** How long a revoke waits for the outcomes of records whose attempt has ended (see `onPartitionsRevoked`). */
  val SettleNanos: Long = 100L * 1000 * 1000
