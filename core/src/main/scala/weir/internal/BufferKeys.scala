package weir.internal

/**
 * The keys' hand-on in a [[BufferState]] ([[weir.TaskOrder.byKey]], [[KeyClaims]]): when the claimant of a
 * key is done with an entry, the next entry parked behind the key is handed on to it, or the key is
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
  def finishKey(key: Any, andTake: Boolean): (BufferState[F, A], Handout[A]) =
    if stopped then (this, Released)
    else
      KeyClaims.next(claimed, key) match
        case turn: Entry[A] =>
          (copy(claimed = KeyClaims.advance(claimed, key, turn), parked = parked - 1), turn)
        case _ =>
          def released = copy(claimed = KeyClaims.advance(claimed, key, Released))
          // the common case of a per-key task: one copy of the state for the release and the take
          if !andTake || size == 0 then (released, Released)
          else
            popClaimable(releasing = key) match
              case taken @ (s, _: Entry[A]) if !s.offererDue => taken
              case (s, Later) => (s, Released) // released by the pop
              case _ => (released, Released)
