package weir.lab.report

import org.knowm.xchart.{CategoryChart, CategoryChartBuilder}
import org.knowm.xchart.style.Styler

import scala.jdk.CollectionConverters.*

/** The lab's bar chart of each approach's elapsed time beside its ideal (a NaN is drawn as an empty bar). */
object ElapsedChart:

  /** One bar pair per approach: `(approach, elapsed ms, ideal ms)`, in the given order. */
  final case class Bar(approach: String, elapsedMs: Double, idealMs: Double)

  def apply(
      title: String,
      bars: Vector[Bar],
      legend: Styler.LegendPosition,
      labelRotation: Int
  ): CategoryChart =
    val c = new CategoryChartBuilder().width(900).height(450)
      .title(title).xAxisTitle("approach").yAxisTitle("ms").build()
    c.getStyler.setLegendPosition(legend)
    c.getStyler.setXAxisLabelRotation(labelRotation)
    val names = bars.map(_.approach).asJava
    def series(f: Bar => Double) = bars.map(b => Double.box(if f(b).isNaN then 0.0 else f(b)): Number).asJava
    val _ = c.addSeries("elapsed", names, series(_.elapsedMs))
    val _ = c.addSeries("ideal", names, series(_.idealMs))
    c
