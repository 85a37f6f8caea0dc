package weir.internal

/**
 * The keys' hand-on in a [[BufferState]] ([[weir.TaskOrder.byKey]], [[UnsafeKeyClaims]]): when the claimant
 * of a key is done with an entry, the next entry parked behind the key is handed on to it, or the key is
 * released. One transition, [[finishKey]], for the plain call ([[UnsafeTaskBuffer.tryFinishKey]]) and the
 * shell's ([[TaskBuffer.finishKey]]), which differ only in what they do when a hand-on lets a producer in.
 */
private[weir] trait BufferKeys[F[_], A]:
  self: BufferState[F, A] =>

  /**
   * The claimant of `key` is done with an entry: the next entry parked behind the key, handed on (the key
   * stays claimed, and a place is freed); or [[Released]], the key released. With `andTake`, a key released
   * is followed in the same step by its claimant's next take (as [[BufferTakes.take]]'s, the key's claim
   * passing to the entry taken), but only when that take wakes no producer: the entry taken is returned
   * instead of [[Released]], which then means that nothing was taken. Stopped: neither (what is parked stays,
   * to be returned as not started), [[Released]].
   */
  def finishKey(key: Any, andTake: Boolean): Handout[A] =
    if stopped then Released
    else
      claimed.nextParked(key) match
        case e: Entry[A] =>
          parked -= 1
          e
        // a take frees a place: one that would let a waiting producer in is left to the shell's take
        case NoTask if !andTake || size == 0 || offerers.due(free + 1) =>
          claimed.unclaim(key)
          Released
        case NoTask =>
          // the common case of a per-key task: the release and the take in one change of the claims
          popClaimable(releasing = key) match
            case e: Entry[A] => e
            case _ => Released // released by the pop
