package weir.lab.report

import cats.effect.{IO, Ref, Resource}
import cats.effect.Resource.ExitCase

import java.nio.file.Path
import scala.concurrent.duration.*

/**
 * An HTML page kept up to date while a run goes: the results finished so far are [[add]]ed, and every
 * `every` the page is drawn again from all of them and written over the file (atomically), if anything was
 * added since the last write. Drawn while running, the page asks the browser to reload it
 * ([[LivePage.Stage.Running]]), so a browser left open on the file follows the run; the last page, written
 * when the resource is released, does not.
 */
final class LivePage[A] private (results: Ref[IO, Vector[A]]):

  /**
   * Records one finished result; it shows on the next write.
   *
   * Never blocks and never draws: the page is drawn on the writer's own fiber. Concurrent callers are
   * allowed (load shapes run side by side); results are kept in the order they were added.
   */
  def add(result: A): IO[Unit] = results.update(_ :+ result)

object LivePage:

  /** What the run was doing when the page was drawn. */
  enum Stage:
    /** Still going: the page reloads itself after `every`. */
    case Running(every: FiniteDuration)

    /** Finished: the page is final, nothing reloads. */
    case Finished

    /** Failed or cancelled: the page shows what finished before, and nothing reloads. */
    case Stopped

    def refresh: Option[FiniteDuration] = this match
      case Running(every) => Some(every)
      case Finished | Stopped => None

  /**
   * Writes `path` at once (nothing finished yet), then every `every` while in use, and a last time on
   * release: [[Stage.Finished]] when the body succeeded, [[Stage.Stopped]] when it failed or was cancelled.
   * `draw` gets every result added so far, in order; it runs on a blocking thread (charts are drawn there).
   */
  def resource[A](
      path: Path,
      every: FiniteDuration
  )(draw: (Vector[A], Stage) => String): Resource[IO, LivePage[A]] =
    require(every > Duration.Zero, s"the live page's period must be > 0, was: $every")
    def write(results: Vector[A], stage: Stage): IO[Unit] =
      IO.blocking(draw(results, stage)).flatMap(ExperimentIo.writeAtomically(path, _))
    // the count is the page's version: results are only ever appended
    def follow(results: Ref[IO, Vector[A]], written: Int): IO[Nothing] =
      IO.sleep(every) *> results.get.flatMap { now =>
        if now.size == written then follow(results, written)
        else write(now, Stage.Running(every)) *> follow(results, now.size)
      }
    for
      results <- Resource.eval(Ref.of[IO, Vector[A]](Vector.empty))
      // released after the follower below is cancelled, so the last write is never overwritten; a write in
      // progress is not interrupted by that cancel (a blocking call), so the follower never leaves a temp file
      _ <- Resource.makeCase(write(Vector.empty, Stage.Running(every))) { (_, exit) =>
        results.get.flatMap(write(_, if exit == ExitCase.Succeeded then Stage.Finished else Stage.Stopped))
      }
      _ <- follow(results, 0).background
    yield new LivePage(results)
