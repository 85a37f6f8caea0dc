package weir.lab.soak

/**
 * What a soak task does, from its number `i`, so that the feeders and the service agree without telling
 * each other: of every 100 tasks, 4 fail their first attempt (durable) or half their attempts (Kafka) and
 * are retried, 6 fail every attempt and end dead (durable, after 3 attempts) or dead-lettered (Kafka, after
 * the pipeline's 3), 2 snooze once (durable), 1 is cancelled before it runs (durable), and one in 1,000 runs
 * for 2 s and is cancelled while it runs (durable). The rest succeed. Tasks are keyed `k<i mod keys>`.
 */
object SoakTask:

  enum Kind:
    case Ok, Flaky, Doomed, Snoozing, Cancelled, Long

  def kind(i: Long): Kind =
    if i % 1000 == 13 then Kind.Long
    else
      (i % 100).toInt match
        case n if n < 4 => Kind.Flaky
        case n if n < 10 => Kind.Doomed
        case n if n < 12 => Kind.Snoozing
        case 12 => Kind.Cancelled
        case _ => Kind.Ok

  /** Attempts a durable task of `kind` may take. */
  def maxAttempts(kind: Kind): Int = if kind == Kind.Doomed then 3 else 20
