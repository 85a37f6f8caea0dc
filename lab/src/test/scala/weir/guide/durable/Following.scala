package weir.guide.durable

// docs/durable.md, "A workflow's identity, its reading and its cancel": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import weir.postgres.*

final class Following(db: Database[IO]):
  // a workflow in one read: each state's count over all its tasks, and its first 1,000 tasks by id, each
  // with its parents and its layer (the longest path to it from a root)
  def workflow(id: WorkflowId): IO[WorkflowView] = TaskBrowser(db).workflow(id, limit = 1000)
  // a batch's progress, its callback's state and 500 of its members after the member `after`, by id
  def members(batch: BatchId, after: Long): IO[BatchView] = TaskBrowser(db).batch(batch, after, limit = 500)
  // cancels every task of the workflow that has not ended, an audit entry each, as ada's
  def cancel(id: WorkflowId): IO[GroupCancel] = Workflows(db, Operator("ada")).cancel(id, "wrong input")
