package weir.postgres

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.{InvalidSettings, Validation}
import weir.postgres.internal.{GraphEnqueue, Graphs, HeaderCodec, Settling, Sql}

/**
 * Adds tasks to one queue. [[enqueue]] and [[enqueueMany]] run in a transaction of their own;
 * [[enqueueIn]] and [[enqueueManyIn]] are `ConnectionIO` steps to run inside the caller's own transaction
 * (the outbox case: the task exists if and only if the caller's writes commit).
 *
 * Every insert notifies the queue's workers (one notification per queue and statement, delivered at
 * commit); workers that miss it find the task at their next poll.
 *
 * Concurrent callers are allowed. Unique keys hold under concurrent enqueuers: two enqueues of the same
 * key insert one task, and the other learns its id ([[Enqueued.Duplicate]]).
 *
 * Errors: every enqueue checks its tasks ([[NewTask.errors]]) and the queue's name before it sends anything,
 * and fails in its effect with one [[weir.InvalidSettings]] naming every bad value (in a batch, each with
 * its task's index); nothing of a refused batch is inserted. A task that waits for others
 * ([[NewTask.after]]) is refused the same way, naming the ids, when one of them is no task of the schema.
 */
final class TaskQueue[F[_], A] private (db: Database[F], val name: String)(using codec: PayloadCodec[A]):

  private val sql = new Sql(db.schema)

  /** The schema of the queue's database. */
  private[postgres] def schema: Schema = db.schema

  /** Enqueues one task in its own transaction. */
  def enqueue(task: NewTask[A]): F[Enqueued] = db.run(enqueueIn(task))

  /**
   * Enqueues a batch in one transaction, a statement per [[TaskQueue.statementSize]] tasks; the results
   * are in the order of `tasks`.
   */
  def enqueueMany(tasks: Seq[NewTask[A]]): F[Vector[Enqueued]] = db.run(enqueueManyIn(tasks))

  /** Enqueues one task as part of the caller's transaction. */
  def enqueueIn(task: NewTask[A]): ConnectionIO[Enqueued] =
    checked(nameErrors ++ task.errors).flatMap(_ =>
      if task.after.nonEmpty then
        GraphEnqueue(db.schema, Vector(node("the task", 0, task)), "NewTask", oneWorkflow = false).map(_.head)
      else
        sql.enqueueOne(name, encode(task)).map((id, inserted) =>
          if inserted then Enqueued.Inserted(id) else Enqueued.Duplicate(id)
        )
    )

  /**
   * Enqueues a batch as part of the caller's transaction; results in the order of `tasks`. The queue's
   * workers are notified once, delivered when the transaction commits.
   */
  def enqueueManyIn(tasks: Seq[NewTask[A]]): ConnectionIO[Vector[Enqueued]] =
    val errors = nameErrors ++
      tasks.iterator.zipWithIndex.flatMap((t, i) => Validation.nested(s"task $i", t.errors))
    checked(errors.toList).flatMap { _ =>
      if tasks.exists(_.after.nonEmpty) then
        GraphEnqueue(
          db.schema,
          tasks.iterator.zipWithIndex.map((t, i) => node(s"task $i", i, t)).toVector,
          "NewTask",
          oneWorkflow = false
        )
      else enqueueIndependent(tasks)
    }

  private def enqueueIndependent(tasks: Seq[NewTask[A]]): ConnectionIO[Vector[Enqueued]] =
    tasks.iterator.map(encode).toVector
      .grouped(TaskQueue.statementSize)
      .toVector
      .flatTraverse(settle(_))
      .flatTap(results => sql.wakeQueue(name).whenA(results.exists(_.isInstanceOf[Enqueued.Inserted])))

  /** `task`, checked already, as a task of a graph of its batch, which waits for no other task of it. */
  private def node(label: String, index: Int, task: NewTask[A]): Graphs.Node =
    Graphs.Node(label, index.toString, name, db.schema, encode(task), Nil, task.after, Vector.empty)

  private[postgres] def nameErrors: List[String] =
    Validation.check(name != null && name.nonEmpty, s"queue name must not be empty, was: '$name'")

  private def checked(errors: List[String]): ConnectionIO[Unit] =
    if errors.isEmpty then FC.unit else FC.raiseError(new InvalidSettings("NewTask", errors))

  // a batch without unique keys is inserted in one round; one with them is settled in rounds
  private def settle(batch: Vector[Sql.EncodedTask]): ConnectionIO[Vector[Enqueued]] =
    if batch.forall(_.uniqueKey.isEmpty) then sql.enqueuePlain(name, batch).map(_.map(Enqueued.Inserted(_)))
    else Settling.rounds(batch)(sql.enqueueMany(name, _))

  /** `task` ready for the database, its payload encoded by this queue's codec. */
  private[postgres] def encoded(task: NewTask[A]): Sql.EncodedTask = encode(task)

  private def encode(task: NewTask[A]): Sql.EncodedTask =
    Sql.EncodedTask(
      payload = codec.encode(task.payload),
      priority = task.priority,
      delayMillis = task.delay.toMillis,
      maxAttempts = task.maxAttempts,
      orderingKey = task.orderingKey,
      uniqueKey = task.uniqueKey,
      headers = HeaderCodec.encode(task.headers)
    )

  override def toString: String = s"TaskQueue(${db.schema}.$name)"

object TaskQueue:

  /** Tasks per insert statement in a batch. */
  val statementSize: Int = 5000

  /** The queue `name` (not empty: an empty one fails every enqueue with [[weir.InvalidSettings]]) of `db`. */
  def apply[F[_], A: PayloadCodec](db: Database[F], name: String): TaskQueue[F, A] = new TaskQueue(db, name)
