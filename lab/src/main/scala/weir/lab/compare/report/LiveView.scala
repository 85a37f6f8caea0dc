package weir.lab.compare.report

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import weir.lab.compare.approaches.Recorder

import scala.concurrent.duration.*

/**
 * The write-up's P/C lines, redrawn in place on standard error while an approach runs: how many tasks have
 * been produced (P) and consumed (C) so far, as two bars of `width` characters. Costs one read of two
 * counters per `every`, nothing per task.
 */
final class LiveView(width: Int = 30, every: FiniteDuration = 200.millis):

  /** Draws while in use; the last state is drawn once more, with a newline, on release. */
  def show(name: String, recorder: Recorder, total: Int): Resource[IO, Unit] =
    val draw = IO(System.err.print("\r" +
      LiveView.line(name, recorder.producedSoFar, recorder.consumedSoFar, total, width)))
    Resource.make(IO.unit)(_ => draw *> IO(System.err.println())) *>
      (draw *> IO.sleep(every)).foreverM.background.void

object LiveView:

  /** `name  P ██████···· 600/1000  C ████······ 400/1000` */
  def line(name: String, produced: Int, consumed: Int, total: Int, width: Int): String =
    def bar(n: Int) =
      val full = if total <= 0 then width else math.min(width, (n.toLong * width / total).toInt)
      "█" * full + "·" * (width - full)
    f"$name%-28s P ${bar(produced)} $produced%5d/$total  C ${bar(consumed)} $consumed%5d/$total"
