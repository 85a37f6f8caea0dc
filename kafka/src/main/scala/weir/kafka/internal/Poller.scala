package weir.kafka.internal

import org.apache.kafka.clients.consumer.{
  CloseOptions, ConsumerRebalanceListener, ConsumerRecord, KafkaConsumer
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
 * and `offsets` are confined to that thread. What other threads touch is the partitions' states
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
    writesDeadLetters: Boolean,
    counters: Counters
) extends ConsumerRebalanceListener:

  private val owned = mutable.HashMap.empty[TopicPartition, PartitionState]
  private val offsets = new Offsets(consumer, settings, counters)
  private val pollTimeout = JDuration.ofNanos(settings.pollTimeout.toNanos)
  private val commitEveryNanos = settings.commitEvery.toNanos
  private val graceNanos = settings.revokeGrace.toNanos
  private var nextCommit = System.nanoTime() + commitEveryNanos
  private var closing = false

  // set by a drain, from any thread, or by a failure: from then on no record is handed out and every
  // partition stays paused, while the consumer stays in its group and goes on committing
  @volatile private var stopped = false

  // the records of the last poll not yet received: those after an undecodable record that the source writes
  // to the dead-letter topic before it asks for the next round (see `round`)
  private var pending: Iterator[(PartitionState, ConsumerRecord[Array[Byte], Array[Byte]])] = Iterator.empty

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

  /**
   * One round: pauses every partition while the source holds `maxInFlight` records, its unread outcomes
   * included (or is stopped), and resumes them otherwise, polls (which runs the rebalance callbacks),
   * decodes what came, and commits the finished prefixes when they are due. Returns the records to hand to
   * the pipeline, in offset order per partition. With a dead-letter topic, the round ends at the first
   * record that does not decode, which it returns for the source to write ([[deadLettered]] once it is
   * written); the next round goes on with the rest of the poll before it polls again.
   */
  def round(): Poller.Round[K, V] =
    if !pending.hasNext then poll()
    val out = Vector.newBuilder[KafkaRecord[K, V] & Interruptible]
    var undecodable = Option.empty[Poller.Undecodable]
    while undecodable.isEmpty && !stopped && pending.hasNext do
      val (state, r) = pending.next()
      val entry = state.receive(r.offset)
      if entry.skipped then counters.skipped.incrementAndGet(): Unit
      else
        try
          val k = keys.deserialize(r.topic, r.headers, r.key)
          val v = values.deserialize(r.topic, r.headers, r.value)
          counters.received.incrementAndGet(): Unit
          out +=
            KafkaRecord(r.topic, r.partition, r.offset, r.timestamp, k, v, r.headers, r.key, r.value, entry)
        catch
          case NonFatal(e) =>
            counters.undecodable.incrementAndGet(): Unit
            // written before the record counts as finished, so that its offset is never committed unwritten;
            // a write that keeps failing fails the source, the record unfinished
            if writesDeadLetters then
              val from = DeadLetters.From(r.topic, r.partition, r.offset, r.key, r.value, r.headers)
              undecodable = Some(Poller.Undecodable(state, entry, from, e))
            else state.finishReceived(entry)
    if undecodable.isEmpty then
      pending = Iterator.empty
      afterPoll()
    Poller.Round(out.result(), undecodable)

  /** An undecodable record of [[round]] is written to the dead-letter topic: it counts as finished. */
  def deadLettered(u: Poller.Undecodable): Unit =
    counters.deadLettered.incrementAndGet(): Unit
    happened += Poller.Event.DeadLettered(u.state.partition, u.from.offset, u.error)
    u.state.finishReceived(u.entry)

  private def poll(): Unit =
    if stopped || counters.held.get + counters.unread.get >= settings.maxInFlight then
      val assigned = consumer.assignment()
      if !assigned.isEmpty then consumer.pause(assigned)
      counters.paused.set(true)
    else
      val toResume = consumer.paused()
      if !toResume.isEmpty then consumer.resume(toResume)
      counters.paused.set(false)
    val polled = consumer.poll(pollTimeout)
    // records of a partition assigned inside this poll may come before the next round pauses it
    pending =
      if stopped then Iterator.empty
      else
        polled.partitions.asScala.iterator.flatMap(tp =>
          owned.get(tp).iterator.flatMap(state => polled.records(tp).asScala.iterator.map(state -> _))
        )

  /** The end of a poll's round: the end offsets, and the commit when it is due. */
  private def afterPoll(): Unit =
    val paused = consumer.paused()
    offsets.publishEndOffsets(owned.keySet, paused)
    if System.nanoTime() - nextCommit >= 0 then
      commit(owned.values)
      counters.commitRounds.incrementAndGet(): Unit
      offsets.refreshEndOffsets(owned.keySet, paused)
      nextCommit = System.nanoTime() + commitEveryNanos

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

  private def commit(states: Iterable[PartitionState]): Unit = offsets.commit(states).foreach(happened += _)

  private def giveUp(states: Vector[PartitionState]): Unit =
    states.foreach { s =>
      s.release()
      owned.remove(s.partition): Unit
      offsets.forget(s.partition)
    }

  /** The last commit, then leaves the group (whose revoke commits nothing new) and closes the consumer. */
  def close(): Unit =
    closing = true
    try commit(owned.values)
    finally consumer.close(CloseOptions.timeout(JDuration.ofNanos(math.max(graceNanos, 1000000000L))))

private[kafka] object Poller:

  /** What a round received: the records to hand out, and the undecodable record that ended it, if one did. */
  final case class Round[K, V](
      records: Vector[KafkaRecord[K, V] & Interruptible],
      undecodable: Option[Undecodable]
  )

  /** A record no deserializer accepted, to be written to the dead-letter topic before it counts as finished. */
  final case class Undecodable(state: PartitionState, entry: Entry, from: DeadLetters.From, error: Throwable)

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
