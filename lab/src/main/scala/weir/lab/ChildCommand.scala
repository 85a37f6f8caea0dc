package weir.lab

import java.nio.file.Paths

/**
 * The command line of a child JVM running `mainClass` on this JVM's class path and Java: the lab's
 * servers, workers and consumers, started by a run or a suite. The environment's `WEIR_CHILD_JAVA_OPTS`
 * (flags separated by spaces) is added to every child's flags, to profile or tune the JVMs a lab measures
 * (docs/lab/kafka.md has a Flight Recorder example).
 */
object ChildCommand:

  def apply(mainClass: String, jvmFlags: List[String], args: List[String]): List[String] =
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    List(java, "--sun-misc-unsafe-memory-access=allow", "--enable-native-access=ALL-UNNAMED") ++ tracing ++
      AotCache.childFlags ++ extra ++ jvmFlags ++
      List("-cp", System.getProperty("java.class.path"), mainClass) ++ args

  private def extra: List[String] =
    sys.env.get("WEIR_CHILD_JAVA_OPTS").toList.flatMap(_.trim.split(" +")).filter(_.nonEmpty)

  /**
   * Cats Effect's fiber tracing off in the children (see ADR 0009: on JDK 25 its per-call `ClassValue`
   * look-up took a sixth of the server's samples), unless this JVM set a mode itself.
   */
  private def tracing: List[String] =
    List(
      s"-Dcats.effect.tracing.mode=${Option(System.getProperty("cats.effect.tracing.mode")).getOrElse("none")}"
    )
