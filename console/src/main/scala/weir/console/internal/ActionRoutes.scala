package weir.console.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import org.http4s.*
import org.http4s.dsl.Http4sDsl
import weir.console.ConsoleAccess
import weir.postgres.{
  BatchId, Batches, Cancel, Database, Discard, GroupCancel, Operator, QueueRate, Retry, TaskAdmin, TaskState,
  UnknownBatch,
  UnknownQueue, UnknownWorkflow, WorkflowId, Workflows
}

/**
 * The operator's actions, every one a POST that only an operator who may act, with their CSRF token, gets
 * done ([[Answers.act]]): a queue's pause, resume and limits, a task's retry, cancel and discard, the same
 * for a selection of tasks, and the cancel of a workflow's or a batch's unfinished tasks. Each goes through
 * [[TaskAdmin]], [[Workflows]] or [[Batches]], so it means what it means in code, and is recorded in the
 * audit log as the operator's (one entry per task), in its own transaction. A request refused here (no right
 * to act, a missing CSRF token, a malformed form) reaches no `TaskAdmin` call and records nothing.
 */
private[console] final class ActionRoutes[F[_]](
    db: Database[F],
    answers: Answers[F]
)(using F: Async[F])
    extends Http4sDsl[F]:
  import answers.{*, given}

  private def operator(who: ConsoleAccess.Act): Operator = Operator(who.operator, who.session)

  /** The actions of `who`, recorded in the audit log as theirs. */
  private def admin(who: ConsoleAccess.Act): TaskAdmin[F] = TaskAdmin(db, operator(who))

  /** What a cancel of a group's unfinished tasks did, for the page it returns to. */
  private def summary(c: GroupCancel): String =
    s"${c.cancelled} cancelled, ${c.requested} running told to stop" +
      (if c.ended > 0 then s", ${c.ended} had ended" else "")

  /** Answers a group's cancel: back to its page, saying what it did, or 404 for an unknown group. */
  private def groupCancel(req: Request[F], id: Long, what: String)(run: F[String]): F[Response[F]] =
    run.attempt.flatMap {
      case Right(done) => redirect(s"../$id?done=${Layout.encode(done)}")
      case Left(_: UnknownWorkflow | _: UnknownBatch) => notFound(req, s"No $what $id.")
      case Left(e) => F.raiseError(e)
    }
  private def limits(req: Request[F], who: ConsoleAccess.Act, queue: String, form: UrlForm): F[Response[F]] =
    def field(name: String) = form.getFirst(name).map(_.trim).filter(_.nonEmpty)
    val parsed: Either[String, (Option[Int], Option[QueueRate])] =
      for
        max <- field("max_running").traverse(v =>
          v.toIntOption.filter(_ > 0).toRight(s"max_running must be a whole number > 0, was: '$v'")
        )
        perSecond <- field("rate").traverse(v =>
          v.toDoubleOption.filter(r => r > 0 && !r.isInfinite).toRight(
            s"rate must be a number > 0, was: '$v'"
          )
        )
        burst <- field("burst").traverse(v =>
          v.toIntOption.filter(_ > 0).toRight(s"burst must be a whole number > 0, was: '$v'")
        )
        _ <- Either.cond(burst.isEmpty || perSecond.isDefined, (), "burst needs a rate")
      yield (max, perSecond.map(r => QueueRate(r, burst.getOrElse(math.ceil(r).toInt.max(1)))))
    parsed.fold(
      badRequest(req, _),
      (max, rate) => control(req, queue)(admin(who).queues.limits(queue, max, rate), "limits set")
    )

  private def control(req: Request[F], queue: String)(change: F[Unit], done: String): F[Response[F]] =
    change.attempt.flatMap {
      case Right(()) => redirect(s"../${Layout.encode(queue)}?done=${Layout.encode(done)}")
      case Left(_: UnknownQueue) => notFound(req, s"No queue '$queue'.")
      case Left(e) => F.raiseError(e)
    }

  /** `action` on each of `ids`, in one transaction; each one's outcome, in their order. */
  private def perform(
      who: ConsoleAccess.Act,
      ids: Vector[Long],
      action: TaskAction
  ): F[Vector[ActionOutcome]] =
    def finishedOnly(id: Long, state: TaskState, verb: String): ActionOutcome =
      ActionOutcome.Refused(s"task $id is ${state.name}: only a dead or cancelled task can be $verb")
    action match
      case TaskAction.Retry =>
        admin(who).tasks.retryMany(ids).map(_.zip(ids).map {
          case (Retry.Retried, _) => ActionOutcome.Done("put back to run")
          case (Retry.Refused(state), id) => finishedOnly(id, state, "retried")
          case (Retry.KeyHeld, id) =>
            ActionOutcome.Refused(s"task $id's unique key is held by a task that has not finished")
          case (Retry.NotFound, _) => ActionOutcome.NotFound
        })
      case TaskAction.Discard =>
        admin(who).tasks.discardMany(ids).map(_.zip(ids).map {
          case (Discard.Discarded, _) => ActionOutcome.Done("discarded")
          case (Discard.Refused(state), id) => finishedOnly(id, state, "discarded")
          case (Discard.NotFound, _) => ActionOutcome.NotFound
        })
      case TaskAction.Cancel =>
        admin(who).tasks.cancelMany(ids).map(_.zip(ids).map {
          case (Cancel.Cancelled, _) => ActionOutcome.Done("cancelled")
          case (Cancel.Requested, _) => ActionOutcome.Done("cancel requested: its worker interrupts it")
          case (Cancel.Finished(state), id) =>
            ActionOutcome.Refused(s"task $id has already finished (${state.name})")
          case (Cancel.NotFound, _) => ActionOutcome.NotFound
        })

  private def batch(req: Request[F], who: ConsoleAccess.Act, form: UrlForm): F[Response[F]] =
    val named = form.getFirst("action").getOrElse("")
    val ids = form.get("id").toVector
    TaskAction.parse(named) match
      case None => badRequest(req, s"unknown action '$named' (retry, cancel or discard)")
      case Some(_) if ids.isEmpty => badRequest(req, "select at least one task")
      case Some(action) =>
        ids.traverse(s => TaskId.unapply(s).toRight(s)) match
          case Left(bad) => badRequest(req, s"malformed task id: '$bad'")
          case Right(parsed) =>
            val distinct = parsed.distinct
            perform(who, distinct, action).map(_.zip(distinct).map {
              case (ActionOutcome.Done(what), id) => id -> what
              case (ActionOutcome.NotFound, id) => id -> s"no task $id"
              case (ActionOutcome.Refused(why), id) => id -> why
            }).flatMap(outcomes => view(req).flatMap(v => Ok(TaskPages.batchResult(v, named, outcomes))))

  val routes: HttpRoutes[F] = HttpRoutes.of[F] {
    case req @ POST -> Root / "queues" / name / "pause" =>
      act(req)((_, who) => control(req, name)(admin(who).queues.pause(name), "paused"))
    case req @ POST -> Root / "queues" / name / "resume" =>
      act(req)((_, who) => control(req, name)(admin(who).queues.resume(name), "resumed"))
    case req @ POST -> Root / "queues" / name / "limit" =>
      act(req)((form, who) => limits(req, who, name, form))

    case req @ POST -> Root / "workflows" / idText / "cancel" =>
      act(req) { (_, who) =>
        idText match
          case TaskId(id) =>
            groupCancel(req, id, "workflow")(
              Workflows(db, operator(who)).cancel(WorkflowId(id)).map(summary)
            )
          case _ => badRequest(req, s"malformed workflow id: '$idText'")
      }
    case req @ POST -> Root / "batches" / idText / "cancel" =>
      act(req) { (_, who) =>
        idText match
          case TaskId(id) =>
            groupCancel(req, id, "batch")(
              Batches(db, operator(who)).cancel(BatchId(id)).map(c => "closed; " + summary(c))
            )
          case _ => badRequest(req, s"malformed batch id: '$idText'")
      }

    case req @ POST -> Root / "tasks" / "actions" => act(req)((form, who) => batch(req, who, form))
    case req @ POST -> Root / "tasks" / idText / TaskAction(action) =>
      act(req) { (_, who) =>
        idText match
          case TaskId(id) =>
            perform(who, Vector(id), action).map(_.head).flatMap {
              case ActionOutcome.Done(what) => redirect(s"../$id?done=${Layout.encode(what)}")
              case ActionOutcome.NotFound => notFound(req, s"No task $id.")
              case ActionOutcome.Refused(why) => conflict(req, why)
            }
          case _ => badRequest(req, s"malformed task id: '$idText'")
      }

  }
