package weir.lab

import java.lang.management.ManagementFactory
import scala.jdk.CollectionConverters.*

/**
 * The JVM's ahead-of-time cache, as the launcher gave it to this JVM (ADR 0020): the flags that the lab's
 * child JVMs (the delay server, the durable workers, the `up-front` approach) are started with too. They
 * run from the same jar on the same JDK, which is what the cache checks, so they start from it as this JVM
 * did; without the launcher's cache (`WEIR_AOT=0`, JDK 21, the test class path) there is none to pass on.
 */
object AotCache:

  /** This JVM's `-XX:AOTCache=…` and the `-Xlog:aot…` settings that keep its messages off standard output, or nothing. */
  lazy val childFlags: List[String] =
    childFlags(ManagementFactory.getRuntimeMXBean.getInputArguments.asScala.toList)

  /** The cache flags among a JVM's flags `own`: none unless it was given a cache. */
  def childFlags(own: List[String]): List[String] =
    if own.exists(_.startsWith("-XX:AOTCache=")) then
      own.filter(f => f.startsWith("-XX:AOTCache=") || f.startsWith("-Xlog:aot"))
    else Nil
