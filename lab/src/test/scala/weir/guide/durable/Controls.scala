package weir.guide.durable

// docs/durable.md, "Queue controls": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import weir.postgres.*

final class Controls(db: Database[IO]):
  val admin: TaskAdmin[IO] = TaskAdmin(db)

  // no worker claims its tasks from now on
  val pause: IO[Unit] = admin.queues.pause("emails")
  // claimed again at once (the workers are woken)
  val resume: IO[Unit] = admin.queues.resume("emails")
  // at most 20 running at once, all workers together
  val limitRunning: IO[Unit] = admin.queues.limitRunning("emails", Some(20))
  // at most 50 claimed per second, in bursts of 10
  val limitRate: IO[Unit] = admin.queues.limitRate("emails", Some(QueueRate(perSecond = 50, burst = 10)))
  // both at once, in one transaction: here, no limits
  val noLimits: IO[Unit] = admin.queues.limits("emails", maxRunning = None, rate = None)
  // every queue's controls and running tasks
  val queues: IO[Vector[QueueInfo]] = admin.overview.queues
  // a queue known before any task or worker
  val addQueue: IO[Unit] = admin.queues.add("reports")
