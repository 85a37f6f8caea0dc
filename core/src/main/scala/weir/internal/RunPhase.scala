package weir.internal

/**
 * Where a worker is in the run of a task: the states of one machine, which [[Worker.step]] applies. The
 * task, its attempts so far, its start and its result are the worker's registers; the phase says which of
 * them hold something.
 *
 * {{{
 *          ┌──▶ Taking ─── nothing to take: the slow take ──▶ Retired | Finished
 *          │      │ took
 *          │      ▼
 *          │    Taken ◀────────── the key's next task, claimed for this worker ◀──────────┐
 *          │      │ ready, or admitted by the stages' effects                              │
 *          │      │ (not admitted: recorded not started, refused or failed ──▶ ★)          │
 *          │      ▼                                                                        │
 *          │   Starting            counted started; the clock read                        │
 *          │      ▼                                                                        │
 *          │  Attempting ◀─────┐                                                           │
 *          │      ▼            │ its backoff, then a permit                                │
 *          │    Ended ──────▶ BackingOff           (failed, to be tried again)             │
 *          │      │ succeeded, or failed for good: the clock read                          │
 *          │      ▼                                                                        │
 *          │  Recording ── a plain record ──▶ HandingOn ───────────────────────────────────┤
 *          │      │ ★ a record that took an effect     │ the hand-on must wake a producer  │
 *          │      ▼                                    ▼                                   │
 *          └── unkeyed; keyed ──────────────▶ HandingOnLater ─────────────────────────────┘
 *               (HandingOn and HandingOnLater go on to Taking once the key is released)
 * }}}
 *
 * A phase's step is a plain call when it needs no wait and no effect (a take that finds a task, a task
 * ready to start, a success recorded without an outcome to publish, a key handed on) and an effect
 * otherwise; the plain path of a run whose settings use no stage is the same machine, with every stage's
 * step completing at once, not a second copy of it.
 *
 * A worker can be cancelled only in the waits of [[Taking]] (the slow take), [[Taken]] (admit and permit),
 * [[Attempting]] (the handler) and [[BackingOff]] (a retry's wait). [[holdsTask]] says who records the task
 * then: the phases from [[Starting]] to [[BackingOff]] hold a started task, which the worker's finalizer
 * records interrupted; before them the stage that waited records it not started, or the buffer takes it
 * back; from [[Recording]] on it is the record's.
 */
private[weir] enum RunPhase(val holdsTask: Boolean):

  /** No task: the fast take, else the slow one (the pool's limit checked first: a worker may retire). */
  case Taking extends RunPhase(false)

  /** A task taken and not started: admit and permit, as one plain check or the stages' effects. */
  case Taken extends RunPhase(false)

  /** Admitted: counted started, its start read from the clock (or the reading that ended the last task). */
  case Starting extends RunPhase(true)

  /** An attempt runs: the handler, its deadline armed if any, registered with the task's interruption. */
  case Attempting extends RunPhase(true)

  /** The attempt ended: a retry's wait if it failed and may be tried again, else the clock for its record. */
  case Ended extends RunPhase(true)

  /** The wait before the next attempt: its backoff, then a permit. */
  case BackingOff extends RunPhase(true)

  /** The task's end recorded: ledger, latency, window, outcome, failure policy. */
  case Recording extends RunPhase(false)

  /** The key's next task handed on to this worker as a plain step, or the key released and the next take. */
  case HandingOn extends RunPhase(false)

  /** The key's hand-on as an effect (it wakes a producer, or follows a record that took an effect). */
  case HandingOnLater extends RunPhase(false)

  /** The pool is over its limit: the worker leaves, counted retired. */
  case Retired extends RunPhase(false)

  /** The buffer will hand out no task any more: the worker leaves. */
  case Finished extends RunPhase(false)
