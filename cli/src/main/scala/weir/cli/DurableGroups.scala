package weir.cli

import cats.effect.{ExitCode, IO}
import scopt.OParser
import weir.postgres.{
  BatchId, BatchView, Batches, Database, DatabaseConfig, GroupCancel, TaskBrowser, TaskState, WorkflowId,
  WorkflowView,
  Workflows
}
import weir.cli.DurableCli.{DurableCommand, Options, builder}

/**
 * `./weir durable workflow ID` and `./weir durable batch ID`: a workflow's or a batch's progress and tasks
 * as tables (a workflow's by layer from its roots, a batch's members by id, a page at a time), or with
 * `--cancel` the cancel of their unfinished tasks, recorded in the audit log. An id that is no number or not
 * above 0 exits 2 naming it; an id the schema does not hold exits 1 with one line.
 */
private[cli] object DurableGroups:

  private def idArg(name: String, what: String) =
    builder.arg[Long](name)
      .validate(id => if id > 0 then builder.success else builder.failure(s"$name must be > 0, was: $id"))
      .action((id, o) => o.copy(task = id)).text(what)

  private def shared(what: String): List[OParser[?, Options]] =
    import builder.*
    List(
      opt[Int]("first").valueName("N")
        .validate(n =>
          if n > 0 && n <= 10000 then success else failure(s"--first must be in 1..10000, was: $n")
        )
        .action((n, o) => o.copy(first = n))
        .text(s"list at most N $what (default 500)"),
      opt[Unit]("cancel").action((_, o) => o.copy(cancel = true))
        .text("cancel its unfinished tasks instead: a waiting one at once, a running one by its worker"),
      opt[String]("reason").valueName("TEXT")
        .validate(r => if r.nonEmpty then success else failure("--reason must not be empty"))
        .action((r, o) => o.copy(reason = Some(r)))
        .text("with --cancel: kept among each task's errors (default: who cancelled what)")
    )

  // --reason and --as are the cancel's
  private def cancelOnly(o: Options): Either[String, Unit] =
    (o.reason.map(r => s"--reason '$r'") ++ o.as.map(n => s"--as '$n'")).headOption
      .filterNot(_ => o.cancel)
      .fold[Either[String, Unit]](Right(()))(option => Left(s"$option needs --cancel"))

  private def connected[A](config: DatabaseConfig)(f: Database[IO] => IO[A]): IO[A] =
    Database.connect[IO](config).use(f)

  object Workflow
      extends DurableCommand(
        "workflow",
        "a workflow's progress and its tasks by layer, or --cancel its unfinished tasks"
      ):
    override protected def own: List[OParser[?, Options]] =
      idArg("WORKFLOW", "the workflow's id (its first task's id)") :: DurableCli.asOption :: shared("tasks")
    override protected def valid(o: Options): Either[String, Unit] = cancelOnly(o)

    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      val id = WorkflowId(o.task)
      connected(config) { db =>
        if o.cancel then
          val flows = Workflows(db, DurableCli.operator(o))
          o.reason.fold(flows.cancel(id))(flows.cancel(id, _)).flatMap(c =>
            IO.println(s"workflow ${id.value}: ${cancelled(c)}")
          )
        else TaskBrowser(db).workflow(id, o.first).flatMap(v => IO.print(workflow(v)))
      }.as(ExitCode.Success)

  object Batch
      extends DurableCommand(
        "batch",
        "a batch's progress, callback and members, or --cancel its unfinished members"
      ):
    override protected def own: List[OParser[?, Options]] =
      import builder.*
      idArg("BATCH", "the batch's id") :: opt[Long]("after").valueName("ID")
        .validate(a => if a >= 0 then success else failure(s"--after must be >= 0, was: $a"))
        .action((a, o) => o.copy(after = a))
        .text("list the members whose ids are above ID, the next page (default 0: from the first)") ::
        DurableCli.asOption :: shared("members")
    override protected def valid(o: Options): Either[String, Unit] = cancelOnly(o)

    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      val id = BatchId(o.task)
      connected(config) { db =>
        if o.cancel then
          val batches = Batches(db, DurableCli.operator(o))
          o.reason.fold(batches.cancel(id))(batches.cancel(id, _)).flatMap(c =>
            IO.println(s"batch ${id.value}: closed; ${cancelled(c)}")
          )
        else TaskBrowser(db).batch(id, o.after, o.first).flatMap(v => IO.print(batch(v)))
      }.as(ExitCode.Success)

  /** What a cancel of a workflow or a batch did, as one line. */
  private def cancelled(c: GroupCancel): String =
    s"${c.cancelled} cancelled, ${c.requested} running told to stop, ${c.ended} had ended"

  /** The counts of `counts` in the states' order, those above 0. */
  private def counted(counts: Map[TaskState, Long]): String =
    TaskState.values.flatMap(s => counts.get(s).filter(_ > 0).map(n => s"$n ${s.name}")).mkString(", ")

  /** A workflow as the command prints it: its progress, then a table of its tasks by layer. */
  def workflow(v: WorkflowView): String =
    val header = Vector("layer", "task", "queue", "state", "attempt", "result", "waits for")
    val rows = v.layers.flatten.map(t =>
      Vector(
        t.layer.toString,
        t.id.toString,
        t.queue,
        t.state.name,
        s"${t.attempt}/${t.maxAttempts}",
        if t.result then "yes" else "-",
        if t.after.isEmpty then "-" else t.after.mkString(",")
      )
    )
    val status = if v.ended then "ended" else s"${v.total - v.finished} unfinished"
    val more =
      if v.truncated then s"  (the first ${v.tasks.size} of ${v.total} tasks; --first N lists more)\n" else ""
    s"workflow ${v.id.value}: ${v.total} tasks (${counted(v.counts)}), $status\n" +
      Table.grid(header +: rows, rightAligned = Set(0, 1)) + more

  /** A batch as the command prints it: its progress and callback, then a table of a page of its members. */
  def batch(v: BatchView): String =
    val p = v.progress
    val header = Vector("task", "queue", "state", "attempt", "result", "workflow")
    val rows = v.members.map(m =>
      Vector(
        m.id.toString,
        m.queue,
        m.state.name,
        s"${m.attempt}/${m.maxAttempts}",
        if m.result then "yes" else "-",
        m.workflow.fold("-")(_.value.toString)
      )
    )
    val status =
      if p.ended then s"ended ${p.endedAt.fold("")(_.toString)}"
      else if p.closed then s"closed, ${p.pending} pending"
      else s"open, ${p.pending} pending"
    s"batch ${p.id.value}: ${p.members} members (${p.completed} completed, ${p.dead} dead, ${p.cancelled} " +
      s"cancelled), $status; callback task ${p.callback} (${v.callbackState.fold("gone")(_.name)})\n" +
      (if rows.isEmpty then "  no members listed\n" else Table.grid(header +: rows, rightAligned = Set(0))) +
      v.next.fold("")(n => s"  more: --after $n\n")
