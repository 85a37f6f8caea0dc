package weir.postgres.internal

import doobie.*
import doobie.free.connection as FC
import weir.postgres.Enqueued

/**
 * An enqueue whose rows carry unique keys, settled in rounds. The insert answers, for each row it settled,
 * its number (from 1), its id and whether it was inserted (false: a duplicate of the task whose id it gives).
 * A row that comes back with neither met a holder of its key that the statement's snapshot cannot see
 * (committed meanwhile, or an earlier row of the same statement): a new statement, with a new snapshot,
 * settles it. Each round settles at least the first such row of every key, so a call ends within as many
 * rounds as one key has rows; [[MaxRounds]] bounds it, and a call beyond it fails naming the rows left.
 */
private[postgres] object Settling:

  /** Rounds after which an enqueue that still has unsettled rows fails. */
  val MaxRounds = 20

  /** Each of `rows` inserted by `insert`, or found a duplicate, in their order. */
  def rounds[R](rows: Vector[R])(insert: Vector[R] => ConnectionIO[Vector[(Int, Long, Boolean)]])
      : ConnectionIO[Vector[Enqueued]] =
    def round(rows: Vector[R], n: Int): ConnectionIO[Vector[Enqueued]] =
      insert(rows).flatMap { answers =>
        val results = new Array[Enqueued | Null](rows.size)
        answers.foreach((i, id, inserted) =>
          results(i - 1) = if inserted then Enqueued.Inserted(id) else Enqueued.Duplicate(id)
        )
        val open = rows.indices.filter(i => results(i) == null).toVector
        if open.isEmpty then FC.pure(results.toVector.map(_.nn))
        else if n >= MaxRounds then
          FC.raiseError(
            new IllegalStateException(s"enqueue of ${open.size} task(s) did not settle after $n rounds")
          )
        else
          round(open.map(rows), n + 1).map { again =>
            open.zip(again).foreach((i, r) => results(i) = r)
            results.toVector.map(_.nn)
          }
      }
    round(rows, 1)
