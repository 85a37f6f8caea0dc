package weir

/**
 * A task that may be told to stop while it runs. On a source built with [[Source.refusable]], the engine
 * runs each attempt of such a task against its interruption: when the task calls the function it was
 * given, with a reason, the attempt's handler is cancelled (Cats Effect cancellation: its finalizers run
 * before the task is recorded) and the task ends [[TaskOutcome.Failed]] with a [[TaskInterrupted]] that
 * carries the reason and [[Disposition.Interrupted]]. An interrupted task is not retried and goes to no
 * failure policy: it was stopped on purpose, it did not fail.
 *
 * A retry's wait (its backoff and rate-limit permit) runs against the interruption too: a task told to
 * stop while it waits for its next attempt ends interrupted then, not once the wait is over.
 *
 * Before each attempt, its retries' included, the engine asks the task's [[Refusable.tryStart]]: a task
 * that refuses before its first attempt ends not started, as any refusable task; one that refuses before
 * a later attempt ends interrupted, with the refusal as its reason.
 *
 * weir-postgres's jobs are interruptible: an operator's cancel of a running task reaches its worker,
 * which interrupts it (see `TaskActions.cancel`).
 *
 * `onInterrupt` is called once per attempt and once per retry's wait, on the worker's fiber; it must not
 * block. `interrupt` may be called from any thread, at most once per registration, and may be called at
 * once, inside `onInterrupt`, when the task was already told to stop. The function returned unregisters
 * `interrupt`: the engine calls it once an attempt or a wait that was not interrupted has ended, after which
 * the task must not call `interrupt` for it (an interrupted one has nothing left to unregister).
 */
trait Interruptible extends Refusable:
  /** Registers `interrupt` for the attempt about to run, or the retry's wait; returns what unregisters it. */
  def onInterrupt(interrupt: String => Unit): () => Unit
