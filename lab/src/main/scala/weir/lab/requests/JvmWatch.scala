package weir.lab.requests

import cats.effect.{IO, Resource}
import com.sun.management.GarbageCollectionNotificationInfo

import java.lang.management.{ManagementFactory, MemoryType}
import java.util.concurrent.atomic.AtomicLong
import javax.management.{Notification, NotificationEmitter, NotificationListener}
import javax.management.openmbean.CompositeData
import scala.jdk.CollectionConverters.*

/**
 * What this JVM spent during a run: peak heap used (the collector's pools, garbage included), peak heap
 * left after a collection (what was still reachable: the figure that shows whether memory grows with N),
 * peak live threads and process CPU time.
 */
final class JvmWatch private (listener: JvmWatch.AfterGc, cpu0: Long):
  def peakHeapMiB: Long = JvmWatch.poolPeaks / JvmWatch.MiB
  def peakAfterGcMiB: Long = listener.peak.get / JvmWatch.MiB
  def peakThreads: Int = ManagementFactory.getThreadMXBean.getPeakThreadCount
  def cpuMs: Long = (JvmWatch.cpuNanos - cpu0) / 1000000

object JvmWatch:
  private val MiB = 1024L * 1024

  /** Collects garbage, resets the peaks and watches until released. */
  def resource: Resource[IO, JvmWatch] =
    Resource.make(IO.blocking {
      System.gc()
      ManagementFactory.getThreadMXBean.resetPeakThreadCount()
      heapPools.foreach(_.resetPeakUsage())
      val listener = new AfterGc(heapPools.map(_.getName).toSet)
      collectors.foreach(_.addNotificationListener(listener, null, null))
      new JvmWatch(listener, cpuNanos) -> listener
    })((_, listener) => IO(collectors.foreach(_.removeNotificationListener(listener)))).map(_._1)

  def heapCapMiB: Long = Runtime.getRuntime.maxMemory / MiB

  private def heapPools =
    ManagementFactory.getMemoryPoolMXBeans.asScala.filter(_.getType == MemoryType.HEAP).toList

  private def poolPeaks: Long = heapPools.map(_.getPeakUsage.getUsed).sum

  private def collectors: List[NotificationEmitter] =
    ManagementFactory.getGarbageCollectorMXBeans.asScala.toList.collect { case e: NotificationEmitter => e }

  private def cpuNanos: Long =
    ManagementFactory.getOperatingSystemMXBean match
      case os: com.sun.management.OperatingSystemMXBean => os.getProcessCpuTime
      case _ => 0L

  /** Tracks the largest heap occupancy right after a collection. */
  private final class AfterGc(heapNames: Set[String]) extends NotificationListener:
    val peak = new AtomicLong

    def handleNotification(n: Notification, handback: AnyRef): Unit =
      if n.getType == GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION then
        val info = GarbageCollectionNotificationInfo.from(n.getUserData.asInstanceOf[CompositeData])
        val after = info.getGcInfo.getMemoryUsageAfterGc.asScala.collect {
          case (pool, usage) if heapNames(pool) => usage.getUsed
        }.sum
        val _ = peak.accumulateAndGet(after, (a, b) => math.max(a, b))
