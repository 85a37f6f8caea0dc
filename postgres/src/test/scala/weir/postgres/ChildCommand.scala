package weir.postgres

import java.lang.management.ManagementFactory
import java.nio.file.Paths
import scala.jdk.CollectionConverters.*

/**
 * The command line of a child JVM a suite starts (a worker or a scheduler to SIGKILL, a process that
 * migrates): `mainClass` on this JVM's Java and class path, with at most `heapMiB` of heap.
 *
 * A child gets this JVM's JIT setting (the build's `weir.test.jit`: C1 only). It runs a few seconds of
 * mostly cold code, as a suite does, so C2's compilations would cost more CPU than they save; what the
 * suites check of a child (what it ran, what it left, what was rescued from it) does not depend on it.
 */
object ChildCommand:

  def apply(mainClass: String, heapMiB: Int, args: List[String]): List[String] =
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    List(java, "--sun-misc-unsafe-memory-access=allow") ++ jit ++
      List(s"-Xmx${heapMiB}m", "-cp", System.getProperty("java.class.path"), mainClass) ++ args

  private lazy val jit: List[String] =
    ManagementFactory.getRuntimeMXBean.getInputArguments.asScala.toList.filter(_.startsWith(
      "-XX:TieredStopAtLevel"
    ))
