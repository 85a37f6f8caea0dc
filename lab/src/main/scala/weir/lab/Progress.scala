package weir.lab

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import me.tongfei.progressbar.{ProgressBar, ProgressBarBuilder, ProgressBarStyle}
import weir.{Running, Snapshot}

import scala.concurrent.duration.*

/**
 * A console progress bar for a running pipeline, drawn on standard error by the `progressbar` library
 * from [[Running.metrics]] snapshots: finished out of `total` (or a count when the total is unknown),
 * with in-flight, buffered and failed tasks beside it. It costs one snapshot per `every`, nothing per
 * task.
 *
 * It lives in the lab, not in weir-core, so that the core depends on Cats Effect and FS2 only: a program
 * that wants a bar draws it from [[Running.metrics]] with the library of its choice, as this does.
 */
object Progress:

  /** Shows a bar while the resource is in use; the bar is completed and closed on release. */
  def console[F[_], A](
      running: Running[F, A],
      total: Option[Long] = None,
      name: String = "weir",
      every: FiniteDuration = 200.millis
  )(using F: Async[F]): Resource[F, Unit] =
    total.foreach(t => require(t >= 0, s"progress total must be >= 0, was: $t"))
    val open = F.delay(
      new ProgressBarBuilder()
        .setTaskName(name)
        .setInitialMax(total.getOrElse(-1L))
        .setStyle(ProgressBarStyle.ASCII)
        .setUpdateIntervalMillis(every.toMillis.toInt.max(50))
        .continuousUpdate()
        .build()
    )
    Resource
      .make(open)(bar => running.snapshot.flatMap(s => F.delay { show(bar, s); bar.close() }))
      .flatMap(bar => F.background(running.metrics(every).evalMap(s => F.delay(show(bar, s))).compile.drain))
      .void

  private def show(bar: ProgressBar, s: Snapshot): Unit =
    val _ = bar.stepTo(
      s.finished
    ).setExtraMessage(s" in flight ${s.inFlight}/${s.limit}, buffered ${s.buffered}, failed ${s.failed}")
