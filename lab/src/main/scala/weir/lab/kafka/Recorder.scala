package weir.lab.kafka

import cats.effect.{IO, Resource}

import java.io.FileOutputStream
import java.nio.charset.StandardCharsets.US_ASCII
import java.nio.file.Path
import java.time.Instant
import java.util.concurrent.{CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

/**
 * What a consumer JVM of `./weir lab kafka` counts of the records its handler processed, whichever the
 * approach: how many, from the first start to the `target`-th finish (or to the time box), and, with a
 * report file, one line per processed record (`partition offset key startMicros finishMicros`).
 *
 * The line is written by the handler, with one `write` to the file, before the handler returns: a record
 * whose offset is committed has its line in the file even when the JVM is SIGKILLed right after (the kernel
 * holds what was written), so a record that has no line was never processed to the end. Safe to call from
 * any number of threads and fibers at once.
 */
final class Recorder private (report: Option[FileOutputStream], target: Long):
  private val count = new AtomicLong
  private val first = new AtomicLong
  private val end = new AtomicLong
  private val reached = new CountDownLatch(1)
  private val begun = new CountDownLatch(1)

  /** A record's handler starts: its start time in microseconds since the epoch (0 when not needed). */
  def started(): Long =
    if report.isDefined || first.get == 0 then
      val now = Recorder.micros()
      if first.compareAndSet(0, now) then begun.countDown()
      now
    else 0L

  /** A record's handler ends (after its work, before it returns). */
  def finished(partition: Int, offset: Long, key: String, start: Long): Unit =
    report.foreach { out =>
      val line = s"$partition $offset $key $start ${Recorder.micros()}\n".getBytes(US_ASCII)
      // one write per line: lines of concurrent handlers never interleave
      out.synchronized(out.write(line))
    }
    if count.incrementAndGet() == target then
      end.set(Recorder.micros())
      reached.countDown()

  /**
   * Waits for the `target`-th record, or until `timeBox` ms have passed since the first record started: how
   * many records were processed, and in how many microseconds from the first start.
   */
  def await(timeBox: Long): IO[(Long, Long)] =
    IO.interruptible(begun.await()) *> IO.interruptible {
      val left = timeBox * 1000 - (Recorder.micros() - first.get)
      reached.await(left.max(0), TimeUnit.MICROSECONDS)
    }.map { done =>
      val stop = if done then end.get else Recorder.micros()
      val n = if done then target else count.get
      (n, stop - first.get)
    }

object Recorder:

  /** Microseconds since the epoch: one clock for every JVM of the machine. */
  def micros(): Long =
    val now = Instant.now()
    now.getEpochSecond * 1000000L + now.getNano / 1000

  /** A recorder stopping at `target` records (0: never), writing to `report` when given. */
  def resource(report: Option[Path], target: Long): Resource[IO, Recorder] =
    Resource
      .make(IO.blocking(report.map(p => new FileOutputStream(p.toFile, true))))(out =>
        IO.blocking(out.foreach(_.close()))
      )
      .map(new Recorder(_, target))
