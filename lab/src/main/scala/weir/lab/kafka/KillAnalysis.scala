package weir.lab.kafka

import java.nio.charset.StandardCharsets.US_ASCII
import java.nio.file.{Files, Path}
import scala.jdk.CollectionConverters.*

/**
 * What the report files of a kill run say, checked against the topic: every record processed (none lost),
 * each key's records run one at a time in offset order, every repeat explained, and how long a finished
 * record waited for its offset to be committed.
 */
object KillAnalysis:

  /** One record processed to the end by consumer `consumer`; times in microseconds since the epoch. */
  final case class Run(consumer: Int, partition: Int, offset: Long, key: String, start: Long, finish: Long)

  /** A sample of the group's committed offsets, read between `before` and `after` (microseconds). */
  final case class Commits(before: Long, after: Long, offsets: Map[Int, Long])

  /**
   * `duplicates`: runs beyond the first of a record; `afterKill` of them follow a run on a consumer that was
   * SIGKILLed later, `afterRevoke` a run on a consumer from which partitions were taken later (or the record
   * moved to another consumer, which only a rebalance does); `unexplained` names the others. `orderViolations`
   * names runs that started while another run of their key was running, or before every earlier record of
   * their key had finished once. `committedEarly`: records whose offset a sample read as committed, the read
   * over before any run of theirs finished. Commit lags are in milliseconds, from a record's first finish to the first sample that
   * has its offset committed.
   */
  final case class Result(
      records: Long,
      lost: Long,
      runs: Long,
      duplicates: Long,
      afterKill: Long,
      afterRevoke: Long,
      unexplained: Vector[String],
      orderViolations: Vector[String],
      committedEarly: Long,
      commitLagMillis: Vector[Double]
  ):
    private lazy val sortedLags = commitLagMillis.sorted
    def lagPercentile(p: Double): Double =
      if sortedLags.isEmpty then Double.NaN
      else sortedLags(math.ceil(p / 100 * sortedLags.size).toInt.max(1) - 1)

  /** Reads a consumer's report file (see [[Recorder]]); a line cut short by a SIGKILL is dropped. */
  def read(consumer: Int, file: Path): Vector[Run] =
    if !Files.exists(file) then Vector.empty
    else
      Files.readAllLines(file, US_ASCII).asScala.toVector.flatMap { line =>
        line.split(' ') match
          case Array(p, o, k, s, f) if line.endsWith(f) && f.nonEmpty =>
            Some(Run(consumer, p.toInt, o.toLong, k, s.toLong, f.toLong))
          case _ => None
      }

  /**
   * `ends`: each partition's end offset (the topic was empty before the run); `killed`: the consumers
   * SIGKILLed; `revoked`: per consumer, when it said partitions had been taken from it.
   */
  def analyse(
      ends: Map[Int, Long],
      runs: Vector[Run],
      killed: Set[Int],
      revoked: Map[Int, Vector[Long]],
      commits: Vector[Commits]
  ): Result =
    val byRecord = runs.groupBy(r => (r.partition, r.offset))
    val records = ends.values.sum
    val lost = ends.toVector.map((p, end) => (0L until end).count(o => !byRecord.contains((p, o))).toLong).sum
    var afterKill = 0L
    var afterRevoke = 0L
    val unexplained = Vector.newBuilder[String]
    byRecord.toVector.sortBy(_._1).foreach { (record, rs) =>
      rs.sortBy(_.finish).sliding(2).foreach {
        case Vector(a, b) =>
          if killed(a.consumer) then afterKill += 1
          else if a.consumer != b.consumer || revoked.getOrElse(a.consumer, Vector.empty).exists(_ > a.finish)
          then afterRevoke += 1
          else
            unexplained +=
              s"partition ${record._1} offset ${record._2}: run twice on consumer ${a.consumer} " +
                s"(finished at ${a.finish} and ${b.finish} µs), which was neither killed nor revoked"
        case _ => ()
      }
    }
    val violations = Vector.newBuilder[String]
    runs.groupBy(r => (r.partition, r.key)).foreach { (key, rs) =>
      // the first run to finish of each record of the key, and the latest of those up to each record
      val firstFinish = rs.groupMapReduce(_.offset)(identity)((a, b) => if b.finish < a.finish then b else a)
        .toVector.sortBy(_._1)
      val offsets = firstFinish.map(_._1).toArray
      val upTo = firstFinish.map(_._2).scanLeft(Option.empty[Run])((m, r) =>
        if m.forall(_.finish < r.finish) then Some(r) else m
      ).toArray
      var busyUntil = Long.MinValue
      var busyWith: Option[Run] = None
      rs.sortBy(r => (r.start, r.finish)).foreach { r =>
        busyWith.filter(_ => r.start < busyUntil).foreach(o =>
          violations +=
            s"key ${key._2} of partition ${key._1}: offset ${r.offset} started on consumer ${r.consumer} " +
              s"at ${r.start} µs while offset ${o.offset} ran on consumer ${o.consumer} until $busyUntil µs"
        )
        val earlier = java.util.Arrays.binarySearch(offsets, r.offset)
        upTo(earlier).filter(_.finish > r.start).foreach(late =>
          violations +=
            s"key ${key._2} of partition ${key._1}: offset ${r.offset} started on consumer ${r.consumer} at " +
              s"${r.start} µs, before its key's offset ${late.offset} had finished (first at ${late.finish} µs, " +
              s"on consumer ${late.consumer})"
        )
        if r.finish > busyUntil then
          busyUntil = r.finish
          busyWith = Some(r)
      }
    }
    // per partition, the samples' committed offsets in time order: the first that passes an offset
    val samples = commits.sortBy(_.before)
    val firstFinish = byRecord.view.mapValues(_.map(_.finish).min).toMap
    var early = 0L
    val lags = Vector.newBuilder[Double]
    ends.foreach { (p, _) =>
      val committed = samples.map(c => c.offsets.getOrElse(p, 0L))
      firstFinish.foreach {
        case ((`p`, o), finish) =>
          val i = lowerBound(committed, o + 1)
          if i < samples.size then
            // the read saw the commit somewhere in [before, after]: only a read over before the finish shows the
            // commit came first; one under way at the finish may have seen a commit made after it
            if samples(i).after < finish then early += 1
            lags += (samples(i).after - finish).max(0L) / 1000.0
        case _ => ()
      }
    }
    Result(
      records = records,
      lost = lost,
      runs = runs.size.toLong,
      duplicates = runs.size.toLong - byRecord.size,
      afterKill = afterKill,
      afterRevoke = afterRevoke,
      unexplained = unexplained.result(),
      orderViolations = violations.result(),
      committedEarly = early,
      commitLagMillis = lags.result()
    )

  /**
   * The first index whose committed offset is at least `target`, in offsets that never go down (a group's
   * committed offset only moves forward here); `xs.size` when none is.
   */
  private def lowerBound(xs: Vector[Long], target: Long): Int =
    var lo = 0
    var hi = xs.size
    while lo < hi do
      val mid = (lo + hi) >>> 1
      if xs(mid) >= target then hi = mid else lo = mid + 1
    lo
