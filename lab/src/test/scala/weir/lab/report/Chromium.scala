package weir.lab.report

import java.io.File
import java.nio.file.{Files, Path, Paths}
import java.util.Comparator
import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*
import scala.util.Try

/** Headless Chromium (Debian's `chromium` package), to load a page as a reader's browser would. */
object Chromium:

  private val names = List("chromium", "chromium-browser")

  /** The browser on PATH, if there is one. */
  def find: Option[Path] =
    sys.env.getOrElse("PATH", "").split(File.pathSeparator).iterator.filter(_.nonEmpty)
      .flatMap(dir => names.map(Paths.get(dir, _)))
      .find(Files.isExecutable(_))

  /**
   * Loads `page` and returns the DOM once it has loaded (its scripts have run), serialized as HTML.
   *
   * The browser gets a throwaway profile, so no earlier run's state or lock can change or stop it, and at
   * most `timeout`: then it is killed with every process it started, and this fails.
   */
  def dumpDom(browser: Path, page: Path, timeout: FiniteDuration): String =
    val profile = Files.createTempDirectory("weir-chromium-profile")
    val out = Files.createTempFile("weir-chromium", ".dom")
    val err = Files.createTempFile("weir-chromium", ".err")
    val process = new ProcessBuilder(
      browser.toString,
      "--headless",
      // root in a container: Chromium's sandbox cannot start there
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-extensions",
      s"--user-data-dir=$profile",
      "--dump-dom",
      page.toUri.toString
    ).redirectOutput(out.toFile).redirectError(err.toFile).start()
    try
      if !process.waitFor(timeout.toMillis, TimeUnit.MILLISECONDS) then
        throw new AssertionError(s"chromium did not finish within $timeout on $page:\n${tail(err)}")
      if process.exitValue != 0 then
        throw new AssertionError(s"chromium exited with ${process.exitValue} on $page:\n${tail(err)}")
      Files.readString(out)
    finally
      // the renderer and helper processes first: once the browser is gone they are no longer its descendants
      process.descendants().iterator.asScala.foreach(_.destroyForcibly())
      val _ = process.destroyForcibly()
      List(out, err).foreach(Files.deleteIfExists(_))
      delete(profile)

  /** Best effort: a killed process may still be writing into its profile while it exits. */
  private def delete(dir: Path): Unit =
    val _ = Try {
      val paths = Files.walk(dir)
      try paths.sorted(Comparator.reverseOrder()).iterator.asScala.foreach(Files.deleteIfExists(_))
      finally paths.close()
    }

  private def tail(file: Path): String = Files.readAllLines(file).asScala.takeRight(20).mkString("\n")
