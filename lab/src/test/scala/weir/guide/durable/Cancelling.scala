package weir.guide.durable

// docs/durable.md, "Cancelling a running task": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import weir.postgres.*

object Cancelling:
  def cancel(admin: TaskAdmin[IO], id: Long): IO[String] =
    admin.tasks.cancel(id, "the customer closed the account").map {
      case Cancel.Cancelled => "it was waiting; now in finished, cancelled"
      case Cancel.Requested => "it runs; its worker is told and interrupts it"
      case Cancel.Finished(state) => s"it had already finished (${state.name}); nothing changed"
      case Cancel.NotFound => "no task has this id"
    }
