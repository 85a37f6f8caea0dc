package weir.internal

import cats.effect.kernel.{Outcome as FiberOutcome, Ref, Resource, Temporal}
import cats.effect.std.Mutex
import cats.effect.syntax.all.*
import cats.syntax.all.*
import weir.{AdaptiveAlgorithm, Limit, Running}

import scala.concurrent.duration.*

/**
 * The non-blocking controller behind [[Limit.adaptive]]: it wraps the handler to measure every attempt
 * (latency, drop or not), gathers the samples in windows, asks the algorithm for a new limit when a
 * window closes, and applies it through [[Running.setLimit]].
 *
 * Nothing waits on the controller: an attempt records its start and its end with one `Ref.modify` each
 * (pure transitions of [[AdaptiveController.State]]); only the attempt that closes a window with a
 * changed limit calls `setLimit`, under a mutex so that the latest decision is the one that stays.
 */
private[weir] final class AdaptiveController[F[_]] private (
    spec: Limit.Adaptive,
    taskTimeout: Option[FiniteDuration],
    state: Ref[F, AdaptiveController.State],
    target: Ref[F, Option[Int => F[Unit]]],
    mutex: Mutex[F]
)(using F: Temporal[F]):
  import AdaptiveController.*

  /**
   * `handler`, measured. A cancelled attempt that ran for at least 99% of the task timeout was cancelled by
   * that timeout (the engine's timeout wraps this handler and its clock started a little earlier) and is a
   * drop; any other cancellation (a drain, a release) is no sample.
   */
  def wrap[A, B](handler: A => F[B]): A => F[B] = a =>
    F.uncancelable { poll =>
      begin.flatMap { t0 =>
        poll(F.unit.flatMap(_ => handler(a))).guaranteeCase {
          case FiberOutcome.Succeeded(_) => end(t0, Sample.Measured)
          case FiberOutcome.Errored(e) => end(t0, if spec.dropOn(e) then Sample.Drop else Sample.Ignored)
          case FiberOutcome.Canceled() =>
            F.monotonic.flatMap { now =>
              val timedOut = taskTimeout.exists(limit => now - t0 >= limit * 99 / 100)
              end(t0, if timedOut then Sample.Drop else Sample.Ignored)
            }
        }
      }
    }

  /** Sends decisions to `setLimit` from now on, starting with the current one. */
  def attach(setLimit: Int => F[Unit]): F[Unit] = target.set(Some(setLimit)) *> applyLatest

  /** The limit the controller wants now (what it has applied, or will apply once attached). */
  def current: F[Int] = state.get.map(_.applied)

  private val begin: F[FiniteDuration] =
    F.monotonic.flatTap(_ => state.update(_.begin))

  private def end(t0: FiniteDuration, sample: Sample): F[Unit] =
    F.monotonic.flatMap { now =>
      state.modify(_.end(spec, t0.toNanos, now.toNanos, sample)).flatMap(changed =>
        // a run that is stopping may refuse new workers; the attempt's own outcome must not change for it
        applyLatest.attempt.void.whenA(changed)
      )
    }

  private val applyLatest: F[Unit] =
    mutex.lock.surround(
      target.get.flatMap(_.traverse_(setLimit => state.get.flatMap(s => setLimit(s.applied))))
    )

private[weir] object AdaptiveController:

  enum Sample:
    case Measured, Drop, Ignored

  /*
   * Invariants: min <= applied <= max; min <= estimate <= max; inFlight = attempts begun and not ended;
   * the window holds only samples of attempts that began at or after windowStart; applied is
   * floor(estimate), or the probe's limit while probing.
   */
  final case class State(
      estimate: Double,
      applied: Int,
      baseline: Long, // least latency seen (ns); Long.MaxValue before the first measured window
      confirmedAt: Long, // when a window last saw the baseline (ns)
      probing: Option[Double], // the estimate to return to after the probe window
      inFlight: Int,
      windowStart: Long,
      measured: Int,
      drops: Int,
      rttSum: Long,
      rttMin: Long,
      maxInFlight: Int
  ):
    def begin: State =
      val n = inFlight + 1
      copy(inFlight = n, maxInFlight = math.max(maxInFlight, n))

    /** Records an attempt that began at `t0` and ended at `now`; true when the applied limit changed. */
    def end(spec: Limit.Adaptive, t0: Long, now: Long, sample: Sample): (State, Boolean) =
      val left = copy(inFlight = inFlight - 1)
      if t0 < windowStart || sample == Sample.Ignored then (left, false)
      else
        val recorded = sample match
          case Sample.Measured =>
            val rtt = now - t0
            left.copy(measured = measured + 1, rttSum = rttSum + rtt, rttMin = math.min(rttMin, rtt))
          case _ => left.copy(drops = drops + 1)
        if recorded.measured + recorded.drops >= spec.minSamples && now - windowStart >= spec.window.toNanos
        then recorded.decide(spec, now)
        else (recorded, false)

    /** Closes the window at `now`: the algorithm's next limit, and perhaps a probe. */
    def decide(spec: Limit.Adaptive, now: Long): (State, Boolean) =
      val seen = measured > 0
      val nextBaseline = if seen then math.min(baseline, rttMin) else baseline
      val confirmed = if seen && rttMin <= baseline then now else confirmedAt
      val window = AdaptiveAlgorithm.Window(
        measured,
        drops,
        if seen then rttSum / measured else 0L,
        if seen then rttMin else 0L,
        nextBaseline,
        maxInFlight
      )
      val fresh = copy(
        windowStart = now,
        measured = 0,
        drops = 0,
        rttSum = 0L,
        rttMin = Long.MaxValue,
        maxInFlight = inFlight
      )
      val next = probing match
        case Some(saved) =>
          // the probe window's least latency is the new baseline, whatever it was before
          val probed = if seen then rttMin else baseline
          fresh.copy(baseline = probed, confirmedAt = now, probing = None).settle(spec, saved)
        case None =>
          val estimate = clamp(spec, spec.algorithm.next(this.estimate, window))
          val settled = fresh.copy(baseline = nextBaseline, confirmedAt = confirmed).settle(spec, estimate)
          spec.algorithm match
            case AdaptiveAlgorithm.Gradient(_, _, Some(interval))
                if seen && now - confirmed >= interval.toNanos =>
              settled.copy(probing = Some(estimate), applied = math.max(spec.min, (estimate / 2).toInt))
            case _ => settled
      (next, next.applied != applied)

    private def settle(spec: Limit.Adaptive, estimate: Double): State =
      copy(estimate = estimate, applied = clamp(spec, estimate).toInt)

  private def clamp(spec: Limit.Adaptive, x: Double): Double =
    if x.isNaN then spec.min.toDouble else math.max(spec.min.toDouble, math.min(spec.max.toDouble, x))

  def initial(spec: Limit.Adaptive, now: Long): State =
    State(spec.initial.toDouble, spec.initial, Long.MaxValue, now, None, 0, now, 0, 0, 0L, Long.MaxValue, 0)

  def apply[F[_]](spec: Limit.Adaptive, taskTimeout: Option[FiniteDuration])(using
      F: Temporal[F]
  ): F[AdaptiveController[F]] =
    for
      now <- F.monotonic
      state <- F.ref(initial(spec, now.toNanos))
      target <- F.ref(Option.empty[Int => F[Unit]])
      mutex <- Mutex[F]
    yield new AdaptiveController(spec, taskTimeout, state, target, mutex)

  /**
   * Starts a run with `start`; for an adaptive limit, first wraps the handler with a controller and, once
   * the run is started, hands it the run's `setLimit`.
   */
  def around[F[_]: Temporal, A, B](settings: Settings[F, A, B])(
      start: Settings[F, A, B] => Resource[F, Running[F, A]]
  ): Resource[F, Running[F, A]] =
    settings.limit match
      case spec: Limit.Adaptive =>
        for
          controller <- Resource.eval(AdaptiveController[F](spec, settings.taskTimeout))
          running <- start(settings.copy(handler = controller.wrap(settings.handler)))
          _ <- Resource.eval(controller.attach(running.setLimit))
        yield running
      case _ => start(settings)
