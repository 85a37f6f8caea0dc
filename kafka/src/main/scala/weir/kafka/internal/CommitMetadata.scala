package weir.kafka.internal

import scala.util.Try

/**
 * The metadata of a commit: which records above the committed offset had finished when it was made, so
 * that the partition's next reader skips them instead of running them again.
 *
 * Format: `w1:` then, relative to the committed offset `c`, the lengths of alternating runs of offsets in
 * base 36, separated by commas: not finished, finished, not finished, finished… The first run starts at
 * `c` itself, which is never finished (it is the first record that has not), so it is at least 1. An
 * offset without a record (compaction, transaction markers) counts as not finished. `w1:3,2` after a
 * commit at 10 says that 13 and 14 finished.
 *
 * Bounded: the text is cut, a whole pair of runs at a time, so that it never exceeds `maxBytes` (Kafka's
 * `offset.metadata.max.bytes` is 4096 by default; a commit whose metadata exceeds the broker's bound is
 * refused). A finished record left out by the cut only runs again: the metadata says what may be skipped,
 * never what must be run. Whatever the gaps, a commit is one offset and at most `maxBytes` of metadata.
 */
private[kafka] object CommitMetadata:
  private val Prefix = "w1:"

  /**
   * The metadata for a commit at `committed`, given the finished offsets above it in increasing order;
   * empty when there are none or `maxBytes` leaves no room for one run.
   */
  def encode(committed: Long, finished: Iterator[Long], maxBytes: Int): String =
    val out = new StringBuilder(Prefix)
    var end = committed // the first offset not yet described
    var runStart = -1L
    var runEnd = -1L
    var any = false
    def flush(): Boolean =
      val pair = (if any then "," else "") +
        java.lang.Long.toString(runStart - end, 36) + "," + java.lang.Long.toString(runEnd - runStart, 36)
      // the metadata is ASCII: one byte per character
      if out.length + pair.length > maxBytes then false
      else
        out.append(pair)
        any = true
        end = runEnd
        true
    var fits = true
    while fits && finished.hasNext do
      val o = finished.next()
      if o > committed then
        if runStart >= 0 && o == runEnd then runEnd += 1
        else
          if runStart >= 0 then fits = flush()
          runStart = o
          runEnd = o + 1
    if fits && runStart >= 0 then flush(): Unit
    if any then out.result() else ""

  /**
   * The finished offsets `metadata` names above `committed`, as `[from, until)` ranges in increasing order;
   * empty for metadata that is not this format (another client's, or none).
   */
  def decode(committed: Long, metadata: String): List[(Long, Long)] =
    if metadata == null || !metadata.startsWith(Prefix) then Nil
    else
      Try {
        val runs = metadata.substring(Prefix.length).split(',').toList.map(java.lang.Long.parseLong(_, 36))
        require(runs.size % 2 == 0 && runs.forall(_ >= 0))
        var at = committed
        runs.grouped(2).toList.flatMap {
          case List(gap, length) =>
            val from = at + gap
            at = from + length
            if length > 0 then List((from, at)) else Nil
          case _ => Nil
        }
      }.getOrElse(Nil)
