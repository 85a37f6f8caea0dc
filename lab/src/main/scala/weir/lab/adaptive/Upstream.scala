package weir.lab.adaptive

import cats.effect.{IO, Ref}

import scala.concurrent.duration.*

/**
 * A simulated upstream with a hidden capacity `K` (which the clients are never told).
 *
 * A request that arrives while `n` requests (itself included) are being served takes
 * `base × max(1, n / K)`: up to `K` at once are served in `base`, beyond that every request waits in line
 * in proportion (a processor-sharing server: throughput stays at `K / base`, latency grows). A request
 * that arrives while the upstream already serves its hard cap is refused: it fails with [[Overloaded]]
 * after `errorLatency`, without being served. `K` follows `schedule` (from the start of the run).
 */
final class Upstream private (
    model: Upstream.Model,
    startedAt: FiniteDuration,
    serving: Ref[IO, Int]
):
  import Upstream.*

  /** One request; fails with [[Overloaded]] beyond the hard cap. */
  val call: IO[Unit] =
    IO.monotonic.flatMap { now =>
      val k = model.capacityAt(now - startedAt)
      val cap = model.hardCap.of(k)
      serving.modify(n => if n >= cap then (n, None) else (n + 1, Some(n + 1))).flatMap {
        case None => IO.sleep(model.errorLatency) *> IO.raiseError(new Overloaded(cap))
        case Some(n) => IO.sleep(model.latency(n, k)).guarantee(serving.update(_ - 1))
      }
    }

object Upstream:

  /** The upstream's refusal beyond its hard cap. */
  final class Overloaded(cap: Int) extends RuntimeException(s"upstream overloaded: more than $cap in flight")

  /** Where requests are refused: a fixed count, or a multiple of the current capacity. */
  enum HardCap:
    case Absolute(n: Int)
    case Times(factor: Double)

    def of(k: Int): Int = this match
      case Absolute(n) => n
      case Times(f) => math.max(1, math.floor(k * f).toInt)

    override def toString: String = this match
      case Absolute(n) => n.toString
      case Times(f) => s"${f}x"

  object HardCap:
    /** `100` (requests) or `2x` (times the current capacity); anything else is refused, naming it. */
    def parse(s: String): Either[String, HardCap] =
      val t = s.trim
      if t.endsWith("x") then
        t.dropRight(1).toDoubleOption.filter(f => f >= 1 && !f.isInfinite) match
          case Some(f) => Right(Times(f))
          case None => Left(s"--hard-cap: a multiple must be a number >= 1 followed by x, was: $s")
      else
        t.toIntOption.filter(_ > 0) match
          case Some(n) => Right(Absolute(n))
          case None => Left(s"--hard-cap must be a count > 0 or a multiple like 2x, was: $s")

  /**
   * @param capacity     K at the start
   * @param changes      (time from the start, new K), in time order
   * @param base         the latency of a request served within capacity
   * @param errorLatency how long a refused request takes to fail
   */
  final case class Model(
      capacity: Int,
      changes: Vector[(FiniteDuration, Int)],
      base: FiniteDuration,
      hardCap: HardCap,
      errorLatency: FiniteDuration
  ):
    require(capacity > 0, s"capacity must be > 0, was: $capacity")
    require(base > Duration.Zero, s"base latency must be > 0, was: $base")
    require(errorLatency >= Duration.Zero, s"error latency must be >= 0, was: $errorLatency")
    changes.foreach((t, k) =>
      require(k > 0 && t >= Duration.Zero, s"capacity change must be T:K with K > 0, was: $t:$k")
    )

    def capacityAt(t: FiniteDuration): Int = changes.takeWhile(_._1 <= t).lastOption.fold(capacity)(_._2)

    /** The capacity phases up to `end`: (from, to, K). */
    def phases(end: FiniteDuration): Vector[(FiniteDuration, FiniteDuration, Int)] =
      val starts = (Duration.Zero -> capacity) +: changes.filter(_._1 < end)
      starts.zip(starts.drop(1).map(_._1) :+ end).map { case ((from, k), to) => (from, to, k) }

    def latency(n: Int, k: Int): FiniteDuration = if n <= k then base else base * n.toLong / k.toLong

  def apply(model: Model): IO[Upstream] =
    for
      t0 <- IO.monotonic
      serving <- IO.ref(0)
    yield new Upstream(model, t0, serving)

  /** `20s:25` → (20 s, 25); anything else is refused, naming it. */
  def parseChange(s: String): Either[String, (FiniteDuration, Int)] =
    s.split(":", 2) match
      case Array(t, k) =>
        val time = weir.cli.Durations.parse(t).toOption
        (time, k.trim.toIntOption.filter(_ > 0)) match
          case (Some(d), Some(n)) => Right((d, n))
          case _ => Left(s"--capacity-change must be TIME:K like 20s:25 (K > 0), was: $s")
      case _ => Left(s"--capacity-change must be TIME:K like 20s:25 (K > 0), was: $s")
