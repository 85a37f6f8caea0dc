package weir.otel

import org.typelevel.otel4s.Attribute
import org.typelevel.otel4s.trace.{SpanKind, Tracer}

/**
 * Spans for weir's tasks through otel4s' `Tracer`, and the trace context carried with a task.
 *
 * Tracing is off until a handler is wrapped: [[traced]] runs each attempt of a task in a span of its own
 * (a consumer span, named as given, with `weir.pipeline.name`), so a failed attempt is a span with the
 * error recorded. Which spans are kept is the SDK's sampler's choice (`OTEL_TRACES_SAMPLER`, e.g.
 * `parentbased_traceidratio`); with `Tracer.noop` a wrapped handler costs a few extra effects.
 *
 * Across a queue, the context travels as string headers: [[headers]] at enqueue, stored with the task
 * (weir-postgres' `NewTask.headers`), and [[tracedFrom]] at processing, which makes each attempt's span a
 * child of the enqueuer's span, in the same trace, however long the task waited and whichever machine runs
 * it.
 */
object WeirTracing:

  /** The current trace context as headers (W3C `traceparent` and `tracestate` with the default propagators). */
  def headers[F[_]: Tracer]: F[Map[String, String]] = Tracer[F].propagate(Map.empty[String, String])

  /** `handler` with each attempt in a span `spanName` of the current trace, if any. */
  def traced[F[_]: Tracer, A, B](spanName: String, pipeline: String)(
      handler: A => F[B]
  ): A => F[B] =
    task => span(spanName, pipeline, handler(task))

  /**
   * `handler` with each attempt in a span `spanName` whose parent is the context in `carrier(task)` (the
   * headers it was enqueued with); a root span when they carry none.
   */
  def tracedFrom[F[_]: Tracer, A, B](spanName: String, pipeline: String)(
      carrier: A => Map[String, String]
  )(handler: A => F[B]): A => F[B] =
    task => Tracer[F].joinOrRoot(carrier(task))(span(spanName, pipeline, handler(task)))

  private def span[F[_]: Tracer, B](name: String, pipeline: String, attempt: F[B]): F[B] =
    Tracer[F]
      .spanBuilder(name)
      .withSpanKind(SpanKind.Consumer)
      .addAttribute(Attribute(MetricNames.PipelineName, pipeline))
      .build
      .surround(attempt)
