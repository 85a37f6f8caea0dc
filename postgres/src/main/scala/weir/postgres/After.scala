package weir.postgres

/**
 * A task that another one waits for, its parent: named by `parent` (a task's id in [[NewTask.after]], a
 * handle of the same graph in [[TaskGraph.add]]), and how it must end for the dependent to run.
 *
 * [[After.completed]] waits for the parent to complete: should it end dead or cancelled instead, the
 * dependent is cancelled, the parent named among its errors, and so are the dependent's own dependents that
 * need it completed. [[After.finished]] waits for the parent to end, however it ends: the dependent runs
 * anyway (a clean-up, a report of what failed).
 *
 * A dependent is claimed once every parent has ended as its entry asks, and then waits its turn as any task
 * does (its ordering key's, its queue's controls). Parents may be of any queue of the schema.
 */
final case class After[+K] private (parent: K, anyOutcome: Boolean)

object After:

  /** Wait for `parent` to complete; its dead or cancelled end cancels the dependent. */
  def completed[K](parent: K): After[K] = new After(parent, anyOutcome = false)

  /** Wait for `parent` to end, completed, dead or cancelled alike: the dependent runs in every case. */
  def finished[K](parent: K): After[K] = new After(parent, anyOutcome = true)

  /** The parents named more than once in `after`, each once, in the order of their second mention. */
  private[postgres] def twice[K](after: Seq[After[K]]): Vector[K] =
    val seen = scala.collection.mutable.HashSet.empty[K]
    after.iterator.map(_.parent).filterNot(seen.add).distinct.toVector
