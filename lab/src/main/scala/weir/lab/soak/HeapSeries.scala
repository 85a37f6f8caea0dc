package weir.lab.soak

/**
 * The heap a soak run sampled after each full collection: `(seconds since the feed started, MiB used)`.
 *
 * [[growth]] is the growth over the last half of the run: the least-squares slope of the samples taken in
 * its second half, times that half's length. A fitted slope rather than the last sample minus the middle
 * one, so that one collection that happened to find more young garbage alive does not decide the figure.
 */
final case class HeapSeries(samples: Vector[(Double, Double)]):

  def during(seconds: Double): HeapSeries = HeapSeries(samples.filter(_._1 <= seconds))

  /** The growth in MiB over `[seconds / 2, seconds]`; 0 with fewer than two samples there. */
  def growth(seconds: Double): Double =
    val half = samples.filter((t, _) => t >= seconds / 2 && t <= seconds)
    if half.size < 2 then 0.0
    else
      val n = half.size.toDouble
      val meanT = half.map(_._1).sum / n
      val meanM = half.map(_._2).sum / n
      val cov = half.map((t, m) => (t - meanT) * (m - meanM)).sum
      val varT = half.map((t, _) => (t - meanT) * (t - meanT)).sum
      if varT == 0 then 0.0 else cov / varT * (seconds / 2)

  def max: Double = samples.map(_._2).maxOption.getOrElse(0.0)
  def min: Double = samples.map(_._2).minOption.getOrElse(0.0)
