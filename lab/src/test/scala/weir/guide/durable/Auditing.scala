package weir.guide.durable

// docs/durable.md, "The audit log": every scala block of the docs must appear verbatim in a file of weir.guide.

import cats.effect.IO
import weir.postgres.*

import scala.concurrent.duration.*

final class Auditing(db: Database[IO]):
  // its actions recorded as nightly-cleanup's
  val admin: TaskAdmin[IO] = TaskAdmin(db, Operator("nightly-cleanup"))
  // the same admin, acting as ada in her session s-7
  val asAda: TaskAdmin[IO] = admin.as(Operator("ada", Some("s-7")))
  // the newest 50 entries of the queue emails; the next page: before = Some(the last entry's id)
  val recent: IO[Vector[AuditEntry]] = AuditLog(db).entries(AuditFilter(queue = Some("emails")), limit = 50)
  // entries deleted, 1,000 per transaction
  val prune: IO[Long] = AuditLog(db).prune(30.days)
