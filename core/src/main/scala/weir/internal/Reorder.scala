package weir.internal

import fs2.{Chunk, Pipe, Pull, Stream}

import scala.collection.immutable.SortedMap

/**
 * Restores input order on a stream of `(position, value)` pairs whose positions are 0, 1, 2, … each
 * exactly once, in any order. Values without a position (`Long.MaxValue`) come last, in arrival order.
 * Holds back only values that arrived early; the [[OrderWindow]] bounds how many.
 */
private[weir] object Reorder:

  def apply[F[_], O]: Pipe[F, (Long, O), O] = in =>
    def go(
        s: Stream[F, (Long, O)],
        next: Long,
        early: SortedMap[Long, O],
        last: Vector[O]
    ): Pull[F, O, Unit] =
      s.pull.uncons.flatMap {
        case None => Pull.output(Chunk.from(early.values)) >> Pull.output(Chunk.from(last))
        case Some((chunk, rest)) =>
          var n = next
          var held = early
          var tail = last
          val out = Vector.newBuilder[O]
          chunk.foreach { (pos, o) =>
            if pos == Long.MaxValue then tail = tail :+ o
            else if pos == n then
              out += o
              n += 1
              while held.headOption.exists(_._1 == n) do
                out += held.head._2
                held = held.tail
                n += 1
            else held = held.updated(pos, o)
          }
          Pull.output(Chunk.from(out.result())) >> go(rest, n, held, tail)
      }
    go(in, 0L, SortedMap.empty, Vector.empty).stream
