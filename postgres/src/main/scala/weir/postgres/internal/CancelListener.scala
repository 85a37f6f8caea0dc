package weir.postgres.internal

/**
 * Relays a cancel's notification to the task it names: the payload names a claim by its lease token (and
 * the reason), and the worker holding that claim interrupts its task ([[Claims.interrupt]]). One part of
 * [[WorkerSession]], called on its thread: the interruption only completes a callback, so it runs right
 * there. A cancel the session misses is found by the heartbeat ([[Heartbeat]]).
 */
private[postgres] object CancelListener:

  /** Interrupts the task of the claim `payload` names, if one of `workers` holds it; true if one did. */
  def cancelled(payload: String, workers: Iterable[WorkerContext]): Boolean =
    cancel(payload).exists((token, reason) => workers.exists(_.claims.interrupt(token, reason)))

  /** A cancel's payload: the claim's lease token, a space, the reason (see [[Sql]]'s cancel). */
  def cancel(payload: String): Option[(Long, String)] =
    val space = payload.indexOf(' ')
    val token = if space < 0 then payload else payload.substring(0, space)
    token.toLongOption.map(_ -> (if space < 0 then "" else payload.substring(space + 1)))
