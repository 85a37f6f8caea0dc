package weir.guide

import cats.effect.IO
import weir.*
import weir.testkit.InMemorySource
import scala.concurrent.duration.*

object TrackedSourceExample:
  def fulfil(order: InMemorySource.Item[String]): IO[Unit] =
    IO.sleep(2.seconds) *>
      (if order.value == "refund" then IO.raiseError(new RuntimeException("card declined")) else IO.unit)

  // "ship" is cancelled while it runs: interrupted, back in the queue (its attempt counted), handed out
  // again by the same run, and handed back by the drain before it starts again (uncounted); the others
  // ran to an outcome, a failure included, and are acknowledged
  val run: IO[(Summary[InMemorySource.Item[String]], Vector[String], Vector[String])] =
    InMemorySource[IO, String].flatMap { orders =>
      for
        ids <- orders.enqueue("pay", "ship", "refund", "audit")
        summary <- orders.start(source => Pipeline(source).process(fulfil).withLimit(Limit.fixed(2))).use {
          run =>
            IO.sleep(1.second) *> orders.cancel(ids(1), "address changed") *> IO.sleep(1500.millis) *>
              run.drain(10.seconds)
        }
        acknowledged <- orders.acknowledged
        waiting <- orders.available
      yield (summary, acknowledged, waiting) // acknowledged: pay, refund, audit; waiting: ship
    }
