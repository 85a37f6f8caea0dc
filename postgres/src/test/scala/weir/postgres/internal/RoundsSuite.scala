package weir.postgres.internal

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.postgres.DbSuite

import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger
import scala.jdk.CollectionConverters.*

/** The prunes' batch loop: rounds until one deletes less than a batch, each in a transaction of its own. */
class RoundsSuite extends DbSuite:

  withDb("drain runs rounds until one deletes fewer rows than a batch, and returns the rows deleted") { db =>
    // every batch size from 1 to 4, with 0 to 3 full rounds, then a last round of 0 to batch - 1 rows
    val cases =
      for
        batch <- (1 to 4).toVector
        full <- 0 to 3
        last <- 0 until batch
      yield (batch, full, last)
    cases.traverse_ { (batch, full, last) =>
      val rounds = new AtomicInteger
      val transactions = new ConcurrentLinkedQueue[Long]
      // a round reports its rows, and notes its transaction's id
      val round = sql"SELECT txid_current()".query[Long].unique.flatMap(tx =>
        FC.delay(transactions.add(tx)) *>
          FC.delay(rounds.incrementAndGet()).map(n => if n <= full then batch else last)
      )
      Rounds.drain(db.run, batch)(round).map { deleted =>
        val clue = s"batch $batch, $full full rounds, then $last"
        assertEquals(deleted, (full * batch + last).toLong, clue)
        assertEquals(rounds.get, full + 1, clue)
        assertEquals(transactions.asScala.toVector.distinct.size, full + 1, clue)
      }
    }
  }
