package weir.testing

import cats.effect.{IO, Ref}
import org.typelevel.log4cats.{LoggerFactory, SelfAwareStructuredLogger}

/**
 * A `LoggerFactory` that writes down every line, every level enabled, for suites to assert on what weir
 * logs (log4cats' own testing module is not on the registry here; this is its `TestingLoggerFactory` in
 * small). Lines are kept in the order they were logged.
 */
final class RecordedLogs private (recorded: Ref[IO, Vector[RecordedLogs.Line]]) extends LoggerFactory[IO]:
  import RecordedLogs.Line

  def lines: IO[Vector[Line]] = recorded.get

  def getLoggerFromName(name: String): SelfAwareStructuredLogger[IO] = new Recorder(name)

  def fromName(name: String): IO[SelfAwareStructuredLogger[IO]] = IO.pure(getLoggerFromName(name))

  private final class Recorder(name: String) extends SelfAwareStructuredLogger[IO]:
    private def add(level: String, ctx: Map[String, String], t: Option[Throwable], m: => String) =
      IO(m).flatMap(text => recorded.update(_ :+ Line(name, level, text, t, ctx)))
    def isTraceEnabled: IO[Boolean] = IO.pure(true)
    def isDebugEnabled: IO[Boolean] = IO.pure(true)
    def isInfoEnabled: IO[Boolean] = IO.pure(true)
    def isWarnEnabled: IO[Boolean] = IO.pure(true)
    def isErrorEnabled: IO[Boolean] = IO.pure(true)
    def trace(message: => String): IO[Unit] = add("TRACE", Map.empty, None, message)
    def trace(t: Throwable)(message: => String): IO[Unit] = add("TRACE", Map.empty, Some(t), message)
    def trace(ctx: Map[String, String])(msg: => String): IO[Unit] = add("TRACE", ctx, None, msg)
    def trace(ctx: Map[String, String], t: Throwable)(msg: => String): IO[Unit] =
      add("TRACE", ctx, Some(t), msg)
    def debug(message: => String): IO[Unit] = add("DEBUG", Map.empty, None, message)
    def debug(t: Throwable)(message: => String): IO[Unit] = add("DEBUG", Map.empty, Some(t), message)
    def debug(ctx: Map[String, String])(msg: => String): IO[Unit] = add("DEBUG", ctx, None, msg)
    def debug(ctx: Map[String, String], t: Throwable)(msg: => String): IO[Unit] =
      add("DEBUG", ctx, Some(t), msg)
    def info(message: => String): IO[Unit] = add("INFO", Map.empty, None, message)
    def info(t: Throwable)(message: => String): IO[Unit] = add("INFO", Map.empty, Some(t), message)
    def info(ctx: Map[String, String])(msg: => String): IO[Unit] = add("INFO", ctx, None, msg)
    def info(ctx: Map[String, String], t: Throwable)(msg: => String): IO[Unit] =
      add("INFO", ctx, Some(t), msg)
    def warn(message: => String): IO[Unit] = add("WARN", Map.empty, None, message)
    def warn(t: Throwable)(message: => String): IO[Unit] = add("WARN", Map.empty, Some(t), message)
    def warn(ctx: Map[String, String])(msg: => String): IO[Unit] = add("WARN", ctx, None, msg)
    def warn(ctx: Map[String, String], t: Throwable)(msg: => String): IO[Unit] =
      add("WARN", ctx, Some(t), msg)
    def error(message: => String): IO[Unit] = add("ERROR", Map.empty, None, message)
    def error(t: Throwable)(message: => String): IO[Unit] = add("ERROR", Map.empty, Some(t), message)
    def error(ctx: Map[String, String])(msg: => String): IO[Unit] = add("ERROR", ctx, None, msg)
    def error(ctx: Map[String, String], t: Throwable)(msg: => String): IO[Unit] =
      add("ERROR", ctx, Some(t), msg)

object RecordedLogs:

  /** One line: its logger's name, its level (`INFO`, `WARN`, …), its text, error and context. */
  final case class Line(
      logger: String,
      level: String,
      message: String,
      error: Option[Throwable],
      context: Map[String, String]
  )

  def apply(): IO[RecordedLogs] = Ref.of[IO, Vector[Line]](Vector.empty).map(new RecordedLogs(_))
