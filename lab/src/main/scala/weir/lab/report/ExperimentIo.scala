package weir.lab.report

import cats.effect.IO
import io.circe.Json
import io.circe.syntax.*
import org.knowm.xchart.BitmapEncoder
import org.knowm.xchart.internal.chartpart.Chart

import java.lang.management.ManagementFactory
import java.nio.file.{AtomicMoveNotSupportedException, Files, Path, Paths, StandardCopyOption}

/**
 * What the `./weir lab` experiments share: the environment block of the JSON files, and writing JSON and
 * PNG files. Their options are parsed as every command's are ([[weir.cli.CommandLine]]).
 */
object ExperimentIo:

  /** The machine and JVM the numbers come from. */
  def environment: Json =
    Json.obj(
      "jdk" -> System.getProperty("java.version").asJson,
      "vm" -> s"${System.getProperty("java.vm.name")} ${System.getProperty("java.vm.version")}".asJson,
      "os" -> s"${System.getProperty("os.name")} ${System.getProperty("os.arch")}".asJson,
      "cores" -> Runtime.getRuntime.availableProcessors.asJson,
      "max_heap_mib" -> (Runtime.getRuntime.maxMemory / (1024 * 1024)).asJson
    )

  /** A number, or null when it is NaN or infinite (JSON has neither). */
  def number(d: Double): Json = if d.isNaN || d.isInfinite then Json.Null else Json.fromDoubleOrNull(d)

  def writeJson(path: Path, json: Json): IO[Unit] =
    IO.blocking {
      Option(path.toAbsolutePath.getParent).foreach(Files.createDirectories(_))
      val _ = Files.writeString(path, json.spaces2)
    } *> IO.println(s"wrote $path")

  /**
   * Writes `text` to `path` through a temporary file in the same directory, moved over `path` in one
   * step: a reader (a browser reloading a live page) sees the old file or the new one, never half of one.
   */
  def writeAtomically(path: Path, text: String): IO[Unit] =
    IO.blocking {
      val dir = Option(path.toAbsolutePath.getParent).getOrElse(Paths.get("."))
      val _ = Files.createDirectories(dir)
      val tmp = Files.createTempFile(dir, s".${path.getFileName}", ".tmp")
      try
        val _ = Files.writeString(tmp, text)
        try Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
        catch
          case _: AtomicMoveNotSupportedException =>
            Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING)
      finally
        val _ = Files.deleteIfExists(tmp)
    }.void

  /** Writes `chart` as a PNG exactly at `path` (XChart would otherwise append its own extension). */
  def writePng(path: Path, chart: Chart[?, ?]): IO[Unit] =
    IO.blocking {
      System.setProperty("java.awt.headless", "true")
      Option(path.toAbsolutePath.getParent).foreach(Files.createDirectories(_))
      val out = Files.newOutputStream(path)
      try BitmapEncoder.saveBitmap(chart, out, BitmapEncoder.BitmapFormat.PNG)
      finally out.close()
    } *> IO.println(s"wrote $path")

  /** `base` with `suffix` inserted before its extension: `a/chart.png` + `-x` is `a/chart-x.png`. */
  def sibling(base: Path, suffix: String): Path =
    val name = base.getFileName.toString
    val dot = name.lastIndexOf('.')
    val next = if dot > 0 then name.take(dot) + suffix + name.drop(dot) else name + suffix + ".png"
    base.resolveSibling(next)

  /** Live platform threads in this JVM (virtual threads are not counted). */
  def liveThreads: Int = ManagementFactory.getThreadMXBean.getThreadCount

  /** Starts counting the peak of live platform threads afresh. */
  def resetPeakThreads(): Unit = ManagementFactory.getThreadMXBean.resetPeakThreadCount()

  /** The most live platform threads since the last [[resetPeakThreads]]. */
  def peakThreads: Int = ManagementFactory.getThreadMXBean.getPeakThreadCount
