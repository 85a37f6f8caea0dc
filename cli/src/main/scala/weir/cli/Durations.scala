package weir.cli

import scopt.{OParser, OParserBuilder, Read}

import scala.concurrent.duration.*

/**
 * How every `./weir` option takes a duration: a number and a unit, `250ms`, `5s`, `1.5s`, `2m`, `1h`. A bare
 * number is refused (is `5` seconds or milliseconds?), so each flag means the same thing on every command.
 * Every such option is made by [[opt]], which names its value `DURATION` in `--help`.
 */
object Durations:

  /** What `--help` shows as an option's value. */
  val valueName = "DURATION"

  private val form = """(\d+(?:\.\d+)?)(ms|s|m|h)""".r

  /** `text` as a duration, or why not. */
  def parse(text: String): Either[String, FiniteDuration] =
    text.trim match
      case form(number, unit) =>
        val nanos = BigDecimal(number) * units.collectFirst { case (`unit`, n) => n }.get
        if nanos > Long.MaxValue then Left(s"too long a duration: $text")
        else if !nanos.isWhole then Left(s"finer than a nanosecond: $text")
        else Right(nanos.toLong.nanos)
      case _ => Left("Expected a number and a unit, such as 250ms, 5s, 2m or 1h.")

  /** `d` as an option takes it, in the largest unit it is a whole number of: `2s`, `100ms`, `10m`, `0s`. */
  def show(d: FiniteDuration): String =
    val nanos = d.toNanos
    if nanos == 0 then "0s"
    else
      units.collectFirst { case (unit, n) if nanos % n == 0 => s"${nanos / n}$unit" }
        .getOrElse(s"${(BigDecimal(nanos) / 1_000_000L).bigDecimal.stripTrailingZeros.toPlainString}ms")

  private val units =
    Vector("h" -> 3_600_000_000_000L, "m" -> 60_000_000_000L, "s" -> 1_000_000_000L, "ms" -> 1_000_000L)

  /** The option `--name DURATION`: a bad value is refused naming the option and the value. */
  def opt[C](builder: OParserBuilder[C], name: String): OParser[FiniteDuration, C] =
    builder.opt[FiniteDuration](name)(using read).valueName(valueName)

  /** A scopt `validate` for a duration that must be at least `min`; the error names the option and the value. */
  def atLeast(option: String, min: FiniteDuration): FiniteDuration => Either[String, Unit] =
    d => if d >= min then Right(()) else Left(s"$option must be at least ${show(min)}, was: ${show(d)}")

  /** A scopt `validate` for a duration that must be > 0. */
  def positive(option: String): FiniteDuration => Either[String, Unit] =
    d => if d > Duration.Zero then Right(()) else Left(s"$option must be > 0s, was: ${show(d)}")

  /** A scopt `validate` for a duration that a command counts in whole milliseconds. */
  def wholeMillis(option: String): FiniteDuration => Either[String, Unit] =
    d =>
      if d.toNanos % 1_000_000 == 0 then Right(())
      else Left(s"$option must be a whole number of milliseconds, was: ${show(d)}")

  // scopt reports what it throws as "Option --NAME failed when given 'VALUE'. <message>"
  private val read: Read[FiniteDuration] =
    Read.reads(text => parse(text).fold(why => throw new IllegalArgumentException(why), identity))
