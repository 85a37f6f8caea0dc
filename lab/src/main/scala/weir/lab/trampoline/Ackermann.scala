package weir.lab.trampoline

/**
 * The Ackermann–Péter function, seed 004's workload: `A(0, n) = n + 1`, `A(m, 0) = A(m - 1, 1)`,
 * `A(m, n) = A(m - 1, A(m, n - 1))`. Defined for m, n ≥ 0; A(1, n) = n + 2, A(2, n) = 2n + 3,
 * A(3, n) = 2^(n+3) − 3.
 *
 * A "step" is one call of the function. In the plain recursion the outer call of the last case is a
 * tail call (compiled to a jump), so the JVM stack holds one frame per pending inner call, plus one.
 */
object Ackermann:

  /** Plain recursion: one JVM frame per pending inner call; overflows the stack when `m, n` are large enough. */
  def plain(m: Int, n: Int): Int =
    if m == 0 then n + 1
    else if n == 0 then plain(m - 1, 1)
    else plain(m - 1, plain(m, n - 1))

  /** What a run of `A(m, n)` does: its value, its steps (calls) and the most frames the plain recursion holds. */
  final case class Shape(value: Int, steps: Long, frames: Int)

  /**
   * Counts `A(m, n)` without recursion (an explicit stack of the pending outer calls), stopping early
   * with `None` once it would take more than `maxSteps` steps.
   */
  def shape(m: Int, n: Int, maxSteps: Long = Long.MaxValue): Option[Shape] =
    require(m >= 0 && n >= 0, s"A(m, n) needs m, n >= 0, was: ($m, $n)")
    var pending = new Array[Int](64) // the m of each outer call waiting for its inner call
    var size = 0
    var cm = m
    var cn = n
    var steps = 0L
    var frames = 1
    var value = -1
    while value < 0 && steps <= maxSteps do
      steps += 1
      if cm == 0 then
        if size == 0 then value = cn + 1
        else
          size -= 1
          cn = cn + 1
          cm = pending(size)
      else if cn == 0 then
        cm -= 1
        cn = 1
      else
        if size == pending.length then pending = java.util.Arrays.copyOf(pending, size * 2)
        pending(size) = cm - 1
        size += 1
        cn -= 1
        frames = math.max(frames, size + 1)
    Option.when(value >= 0)(Shape(value, steps, frames))

  /**
   * The plain recursion, counting its frames: [[maxFrames]] is the deepest it got, also when it ended in
   * a `StackOverflowError`. Same shape as [[plain]] (the outer call stays a tail call), so it overflows
   * at about the same depth.
   */
  final class DepthProbe:
    private var frames = 1
    var maxFrames: Int = 1

    def ack(m: Int, n: Int): Int =
      if m == 0 then n + 1
      else if n == 0 then ack(m - 1, 1)
      else
        frames += 1
        if frames > maxFrames then maxFrames = frames
        val inner = ack(m, n - 1)
        frames -= 1
        ack(m - 1, inner)
