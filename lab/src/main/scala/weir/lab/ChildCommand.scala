package weir.lab

import java.nio.file.Paths

/**
 * The command line of a child JVM running `mainClass` on this JVM's class path and Java: the lab's
 * servers, workers and consumers, started by a run or a suite.
 */
object ChildCommand:

  def apply(mainClass: String, jvmFlags: List[String], args: List[String]): List[String] =
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    List(java, "--sun-misc-unsafe-memory-access=allow", "--enable-native-access=ALL-UNNAMED") ++ tracing ++
      AotCache.childFlags ++ jvmFlags ++ List("-cp", System.getProperty("java.class.path"), mainClass) ++ args

  /**
   * Cats Effect's fiber tracing off in the children (see ADR 0009: on JDK 25 its per-call `ClassValue`
   * look-up took a sixth of the server's samples), unless this JVM set a mode itself.
   */
  private def tracing: List[String] =
    List(
      s"-Dcats.effect.tracing.mode=${Option(System.getProperty("cats.effect.tracing.mode")).getOrElse("none")}"
    )
