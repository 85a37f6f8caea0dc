package weir.otel

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import org.typelevel.otel4s.metrics.{Meter, ObservableMeasurement}
import org.typelevel.otel4s.{Attribute, Attributes}
import weir.kafka.{KafkaSource, KafkaStats}

import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

/**
 * OpenTelemetry metrics of weir-kafka: each source's [[weir.kafka.KafkaStats]] as counters and gauges, and the consumer
 * lag of every partition it owns ([[KafkaMetricNames]] lists them). Registered like [[WeirMetrics]], on the
 * same `Meter`; a source's pipeline is instrumented by [[WeirMetrics]] as before, and the source by
 * [[instrument]]:
 *
 * {{{
 * (WeirMetrics.register(meter), KafkaMetrics.register(meter)).tupled.use { (engine, kafka) =>
 *   val source = KafkaSource.start(settings, keys, values)(build)
 *   engine.instrumentBy(kafka.instrument(source, settings.groupId), "orders")(_.running).useForever
 * }
 * }}}
 *
 * ==What it costs==
 * Nothing per record and no request to the broker per collection: the collection reads the sources' own
 * counts ([[weir.kafka.KafkaSource#stats]]); the lag is what the poller publishes from its fetches (see
 * [[weir.kafka.KafkaStats#endOffsets]]).
 *
 * ==Series==
 * A group's counters sum its sources in this process, those going on and those ended (their final counts
 * kept), so they never go back. `held`, `unread` and `paused` sum the sources going on; the lag is reported
 * for the partitions they own now (a partition owned by two sources for a moment of a rebalance reports the
 * larger lag), so a partition that moved to another process leaves this one's series.
 */
final class KafkaMetrics[F[_]] private (sources: KafkaMetrics.Sources[F])(using F: Async[F]):

  /**
   * `source`, its [[weir.kafka.KafkaStats]] reported under `group` (its [[weir.kafka.KafkaSettings.groupId]]) while it
   * lives and after: attached once acquired, and retired once released, after the source's own release, so
   * that its final counts are kept.
   *
   * Concurrent calls are allowed (each source is its own entry; those under one name add up). Cancellation:
   * the source is released as its own resource says; its counts are kept all the same.
   */
  def instrument[K, V, B](
      source: Resource[F, KafkaSource[F, K, V, B]],
      group: String
  ): Resource[F, KafkaSource[F, K, V, B]] =
    for
      slot <- Resource.make(F.ref(Option.empty[(Long, KafkaSource[F, ?, ?, ?])]))(
        _.get.flatMap(_.traverse_((id, s) =>
          s.stats.flatMap(last => F.delay(sources.retire(group, id, last)))
        ))
      )
      s <- source
      _ <- Resource.eval(F.uncancelable(_ =>
        F.delay(sources.attach(group, s)).flatMap(id => slot.set(Some(id -> s)))
      ))
    yield s

object KafkaMetrics:

  /** Registers the Kafka sources' counters and gauges with `meter`; releasing it unregisters them. */
  def register[F[_]](meter: Meter[F])(using F: Async[F]): Resource[F, KafkaMetrics[F]] =
    val sources = new Sources[F]
    def counter(name: String, unit: String, what: String) =
      meter.observableCounter[Long](name).withUnit(unit).withDescription(what).createObserver
    def upDown(name: String, unit: String, what: String) =
      meter.observableUpDownCounter[Long](name).withUnit(unit).withDescription(what).createObserver
    val cumulative: Vector[(String, String, String, Counts => Long)] = Vector(
      (KafkaMetricNames.Consumed, "{message}", "Records received and handed to the pipeline", _.received),
      (KafkaMetricNames.Undecodable, "{message}", "Records the deserializers rejected", _.undecodable),
      (KafkaMetricNames.Skipped, "{message}", "Records an earlier reader had finished", _.skipped),
      (
        KafkaMetricNames.DeadLettered,
        "{message}",
        "Records written to the dead-letter topic",
        _.deadLettered
      ),
      (
        KafkaMetricNames.DeadLetterFailures,
        "{message}",
        "Dead-letter writes that failed for good",
        _.deadLetterFailures
      ),
      (KafkaMetricNames.Commits, "{commit}", "Offset commits that succeeded", _.commits),
      (KafkaMetricNames.CommitFailures, "{commit}", "Offset commits that failed", _.commitFailures),
      (
        KafkaMetricNames.CommitRounds,
        "{round}",
        "Times the poller looked for offsets to commit",
        _.commitRounds
      ),
      (KafkaMetricNames.Revoked, "{partition}", "Partitions revoked or lost", _.revoked),
      (KafkaMetricNames.Interrupted, "{message}", "Running records interrupted by a revoke", _.interrupted)
    )
    for
      counters <- Resource.eval(cumulative.traverse((name, unit, what, read) =>
        counter(name, unit, what).map(_ -> read)
      ))
      gauges <- Resource.eval(
        (
          upDown(KafkaMetricNames.Held, "{message}", "Records held now"),
          upDown(KafkaMetricNames.Unread, "{message}", "Outcomes known and not yet read"),
          upDown(KafkaMetricNames.Paused, "{source}", "Sources whose partitions are paused"),
          meter
            .observableGauge[Long](KafkaMetricNames.Lag)
            .withUnit("{message}")
            .withDescription("End offset minus committed offset of each partition owned")
            .createObserver
        ).tupled
      )
      (held, unread, paused, lag) = gauges
      collect = F.delay(sources.series).flatMap(_.toVector.traverse_ { (group, series) =>
        series.live.values.toVector.traverse(_.stats).flatMap { live =>
          val on =
            Attributes(Attribute(KafkaMetricNames.System, "kafka"), Attribute(KafkaMetricNames.Group, group))
          val total = live.foldLeft(series.ended)((c, s) => c + Counts.of(s))
          val lags = live.flatMap(_.lag).groupMapReduce(_._1)(_._2)(math.max)
          counters.traverse_((m, read) => m.record(read(total), on)) *>
            held.record(live.map(_.held.toLong).sum, on) *>
            unread.record(live.map(_.unread.toLong).sum, on) *>
            paused.record(live.count(_.paused).toLong, on) *>
            lags.toVector.traverse_ { (tp, n) =>
              lag.record(
                n,
                on.added(Attribute(KafkaMetricNames.Topic, tp.topic)).added(
                  Attribute(KafkaMetricNames.Partition, tp.partition.toString)
                )
              )
            }
        }
      })
      _ <- meter.batchCallback(
        collect,
        held,
        (Vector[ObservableMeasurement[F, ?]](unread, paused, lag) ++ counters.map(_._1))*
      )
    yield new KafkaMetrics(sources)

  /** The cumulative counts of [[weir.kafka.KafkaStats]], summed over sources. */
  private final case class Counts(
      received: Long,
      undecodable: Long,
      skipped: Long,
      deadLettered: Long,
      deadLetterFailures: Long,
      commits: Long,
      commitFailures: Long,
      commitRounds: Long,
      revoked: Long,
      interrupted: Long
  ):
    def +(o: Counts): Counts =
      Counts(
        received = received + o.received,
        undecodable = undecodable + o.undecodable,
        skipped = skipped + o.skipped,
        deadLettered = deadLettered + o.deadLettered,
        deadLetterFailures = deadLetterFailures + o.deadLetterFailures,
        commits = commits + o.commits,
        commitFailures = commitFailures + o.commitFailures,
        commitRounds = commitRounds + o.commitRounds,
        revoked = revoked + o.revoked,
        interrupted = interrupted + o.interrupted
      )

  private object Counts:
    val zero: Counts = Counts(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    def of(s: KafkaStats): Counts =
      Counts(
        received = s.received,
        undecodable = s.undecodable,
        skipped = s.skipped,
        deadLettered = s.deadLettered,
        deadLetterFailures = s.deadLetterFailures,
        commits = s.commits,
        commitFailures = s.commitFailures,
        commitRounds = s.commitRounds,
        revoked = s.revoked,
        interrupted = s.interrupted
      )

  /** One group's series: its sources going on, by id, and what the ended ones counted. */
  private final case class Series[F[_]](live: Map[Long, KafkaSource[F, ?, ?, ?]], ended: Counts)

  /**
   * The sources reported, by group. A source is retired, its last counts added to the ended totals, in the
   * same atomic step that removes it, so that a collection sees it either live or ended, never both nor
   * neither; a series stays when its sources have ended (a cumulative counter must not go back).
   */
  private final class Sources[F[_]]:
    private val state = new AtomicReference(Map.empty[String, Series[F]])
    private val ids = new AtomicLong

    def series: Map[String, Series[F]] = state.get

    def attach(group: String, source: KafkaSource[F, ?, ?, ?]): Long =
      val id = ids.incrementAndGet()
      val _ = state.updateAndGet { m =>
        val s = m.getOrElse(group, Series[F](Map.empty, Counts.zero))
        m.updated(group, s.copy(live = s.live.updated(id, source)))
      }
      id

    def retire(group: String, id: Long, last: KafkaStats): Unit =
      val _ = state.updateAndGet { m =>
        m.get(group) match
          case Some(s) if s.live.contains(id) =>
            m.updated(group, Series(s.live - id, s.ended + Counts.of(last)))
          case _ => m
      }
