package weir.lab.channels

/**
 * The zero-overhead schedules the channel experiment (seed 001) measures against. Every task is
 * available at time 0 and needs exactly its duration; nothing else costs time. Durations are in any one
 * unit (the experiment uses nanoseconds).
 */
object Ideal:

  /** With no limit every task starts at once: the makespan is the longest task (0 for no tasks). */
  def unbounded(durations: Seq[Long]): Long =
    durations.foreach(d => require(d >= 0, s"durations must be >= 0, was: $d"))
    durations.maxOption.getOrElse(0L)

  /**
   * With at most `k` at once: the first-come list schedule, where tasks start in input order, each as soon
   * as one of the `k` slots is free (the greedy schedule a bounded parallel loop produces with no
   * overhead). Its makespan is when the last task ends.
   */
  def bounded(durations: Seq[Long], k: Int): Long =
    require(k > 0, s"k must be > 0, was: $k")
    durations.foreach(d => require(d >= 0, s"durations must be >= 0, was: $d"))
    weir.lab.compare.scenarios.Ideal.makespan(durations.map(_ => 0L), durations, k)

  /** [[bounded]] when `limit` is set, [[unbounded]] otherwise. */
  def of(durations: Seq[Long], limit: Option[Int]): Long =
    limit.fold(unbounded(durations))(bounded(durations, _))

  /**
   * When each request is granted by a token bucket that holds `burst` permits, starts full at time 0 and
   * earns `permits` permits per `per` time units, serving requests first come, first served, one permit
   * each. `requests` are the times the requests are made, in the order they are served (non-decreasing).
   *
   * The k-th request (from 0) is granted at `max(request_k, grant_{k-1}, due_k)`, where `due_k` is when
   * the bucket has earned its `(k - burst + 1)`-th permit: ⌈(k - burst + 1) × per / permits⌉ after the
   * last moment it was full (when the bucket fills up while nobody waits, the count starts again from
   * that moment: a full bucket earns nothing). This is weir's `RateLimiter.tokenBucket` with no cost.
   */
  def tokenBucketGrants(requests: Seq[Long], permits: Long, per: Long, burst: Int): Vector[Long] =
    require(permits > 0, s"permits must be > 0, was: $permits")
    require(per > 0, s"per must be > 0, was: $per")
    require(burst >= 1, s"burst must be >= 1, was: $burst")
    requests.sliding(2).foreach {
      case Seq(a, b) => require(a <= b, s"requests must be in order, was: $a then $b")
      case _ => ()
    }
    // whole permits earned `elapsed` after the anchor, and the time needed to earn `k`
    def earned(elapsed: Long): Long = (BigInt(elapsed) * permits / per).toLong
    def needed(k: Long): Long =
      val p = BigInt(k) * per
      ((p + permits - 1) / permits).toLong
    var anchor = 0L // the bucket was full at `anchor` and `taken` permits were granted since
    var taken = 0L
    var last = 0L
    requests.toVector.map { request =>
      val t = math.max(request, last)
      if burst + earned(t - anchor) - taken >= burst then
        // full (nobody waits: requests are served in order): the count starts again at t
        anchor = t
        taken = 0L
      val level = burst + earned(t - anchor) - taken
      val grant = if level >= 1 then t else anchor + needed(taken + 1 - burst)
      taken += 1
      last = grant
      grant
    }
