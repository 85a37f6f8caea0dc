package weir.lab

/** Median, least and greatest of a set of measurements; all NaN when there are none. */
final case class Stats(median: Double, min: Double, max: Double):
  def isEmpty: Boolean = median.isNaN

object Stats:
  /** The median is the mean of the middle two when their number is even. */
  def of(xs: Vector[Double]): Stats =
    if xs.isEmpty then Stats(Double.NaN, Double.NaN, Double.NaN)
    else
      val s = xs.sorted
      val median = if s.size % 2 == 1 then s(s.size / 2) else (s(s.size / 2 - 1) + s(s.size / 2)) / 2
      Stats(median, s.head, s.last)
