package weir.guide.durable

// docs/durable.md, "Enqueue" (the outbox): DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.postgres.*

final case class Order(id: Long, email: String)

object Outbox:
  def insertOrder(order: Order): ConnectionIO[Int] =
    sql"INSERT INTO orders (id, email) VALUES (${order.id}, ${order.email})".update.run

  // the order and its e-mail's task commit together, or neither does
  def place(db: Database[IO], emails: TaskQueue[IO, Email], order: Order): IO[Enqueued] =
    (insertOrder(order) *> emails.enqueueIn(NewTask(Email(order.email, "thanks"))))
      .transact(db.transactor) // or your own transactor to the same database
