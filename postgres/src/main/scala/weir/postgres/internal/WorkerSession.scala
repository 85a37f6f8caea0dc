package weir.postgres.internal

import cats.effect.kernel.{Async, Deferred, Ref, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import org.postgresql.PGConnection
import weir.Service
import weir.postgres.Schema

import java.sql.Connection
import java.util.concurrent.{Executors, ThreadFactory}
import scala.concurrent.ExecutionContext
import scala.concurrent.duration.*

/**
 * The session of every worker of one [[weir.postgres.Database]] (a [[WorkerSession.Hub]]): one connection
 * held for a long time (outside any pool, or one of the user's), on a thread of its own, whatever the
 * number of workers and queues, that serves each worker that has joined it through three parts, each
 * doing one thing on that connection:
 *
 *   - [[Notifier]]: a notification naming a worker's queue wakes that worker's claimer, or, when the
 *     claimer is idle, is answered at once with a claim on this connection whose rows go to the claimer
 *     (see [[IdleGate]]), since this thread and its server process are the two that are awake;
 *   - [[CancelListener]]: a notification on the cancel channel naming a claim of a worker interrupts its
 *     task ([[Claims.interrupt]]);
 *   - [[SessionLocks]]: each worker's session lock (see [[Sql.holdSession]]), which the server frees when
 *     the process dies, so that other workers rescue its tasks within a heartbeat instead of after
 *     `deadAfter`; a worker that leaves has its lock released.
 *
 * The session itself is a [[weir.Service]] (`session`) whose round is one connection. Its connection's sockets come from [[ImmediatePeekSocketFactory]] (when weir
 * opens it), so that pgjdbc hands a notification on without first waiting a millisecond for another.
 *
 * The connection is checked with a query every `checkEvery`, so one that died without a word (a restarted
 * server, a dropped TCP session) is found and opened again; each new connection also wakes every claimer
 * once, for whatever was enqueued while no one listened, and takes every lock again. A lock still held by
 * a previous session of this process that the server has not ended (its connection went silent rather
 * than closed) cannot be taken: the check ends that session and takes the lock at the next check;
 * meanwhile the old session's lock says the same thing. Until the connection is back the claimers still
 * poll, so a lost session delays tasks by at most the poll interval and loses none; the workers'
 * heartbeats, on their pool, keep them from being taken for dead.
 */
private[postgres] object WorkerSession:

  /**
   * How often the session is checked with a query: every 5 s, or every `readTimeout` when that is shorter,
   * so that a session gone silent is found within `readTimeout` plus this, at most twice the `readTimeout`
   * of a database that asks to find dead connections fast.
   */
  def checkEvery(readTimeout: FiniteDuration): FiniteDuration = readTimeout.min(5.seconds)

  /** How long one wait for notifications blocks its thread (and so how long a join or leave may wait). */
  val waitSlice: FiniteDuration = 250.millis

  /**
   * A worker the session serves: its claims go to its claimer through `gate`; `wake` wakes the claimer;
   * `faults` counts the session's errors in the worker's stats, and logs their streaks with the worker's
   * queue and id, as its other parts do.
   */
  final class Member[F[_]](
      val worker: WorkerContext,
      val gate: IdleGate[F],
      val wake: Queue[F, Unit],
      val faults: Faults[F]
  )

  /**
   * The workers a session serves, and the joins and leaves it has not yet acted on.
   *
   * Invariant: `waiting` is empty while `up` is false (no session is on a connection or opening one):
   * whoever sets `up` to false completes them, since no session would act on them; a member is then served
   * by the next connection, which takes every member's lock.
   */
  private final case class State[F[_]](
      members: Map[Long, Member[F]],
      waiting: Vector[Deferred[F, Unit]],
      up: Boolean
  )

  /**
   * The session shared by the workers of one `Database`, on connections from `open`, checked every
   * `checkEvery`. Each failure is reported to the faults of every worker that has joined: a streak of
   * failed sessions is logged by each worker once when it begins (WARN) and once when a session's first
   * check succeeds again (INFO), and counted in its stats.
   */
  final class Hub[F[_]] private[WorkerSession] (state: Ref[F, State[F]])(using F: Async[F]):

    /**
     * Serves `member` until release. Ready once the session has tried to take the member's lock (whether
     * or not it could), or at once while no connection is up: a worker killed right after its start is
     * then found by its ended session too, not only after `deadAfter`. Release waits until the session
     * has let the lock go (or has no connection). The member's claimer is woken once it has joined, as by
     * every new connection, for whatever was enqueued before. Concurrent joins and leaves are allowed.
     */
    def join(member: Member[F]): Resource[F, Unit] =
      val owner = member.worker.owner
      def change(f: Map[Long, Member[F]] => Map[Long, Member[F]]): F[Unit] =
        Deferred[F, Unit].flatMap(done =>
          state.modify(s =>
            if s.up then (s.copy(members = f(s.members), waiting = s.waiting :+ done), done.get)
            else (s.copy(members = f(s.members)), F.unit)
          ).flatten
        )
      Resource.make(change(_.updated(owner, member)) *> member.wake.tryOffer(()).void)(_ => change(_ - owner))

  /**
   * The session's service: a round is one session, on one connection, that ends only when the connection
   * fails; the next opens a new one after 100 ms, doubling to 5 s while they fail.
   */
  val settings: Service.Settings =
    Service.Settings("session", every = Duration.Zero, backoff = Service.Backoff(100.millis, 5.seconds))

  /** The hub: its session is a [[weir.Service]] of the resource, run on a thread of its own. */
  def hub[F[_]](
      open: Resource[F, Connection],
      schema: Schema,
      checkEvery: FiniteDuration
  )(using F: Async[F]): Resource[F, Hub[F]] =
    val sql = new Sql(schema)
    for
      state <- Resource.eval(F.ref(State[F](Map.empty, Vector.empty, up = true)))
      pool <- Resource.make(F.delay(Executors.newSingleThreadExecutor(thread(schema.channel))))(pool =>
        F.delay(pool.shutdown())
      )
      session = new Session(open, state, sql, schema, checkEvery)
      // released after the service: the joins and leaves still waiting are let go once no session runs
      _ <- Resource.onFinalize(session.down)
      _ <- Service.run(settings, new EveryMember(state))(
        F.evalOn(session.round, ExecutionContext.fromExecutor(pool)).as(Service.Next.Again)
      )
    yield new Hub(state)

  /** The session's failures and successes, told to every member's own faults. */
  private final class EveryMember[F[_]](state: Ref[F, State[F]])(using F: Async[F]) extends Service.Faults[F]:
    def failed(e: Throwable): F[Unit] =
      state.get.flatMap(_.members.values.toVector.traverse_(_.faults.failed(e)))
    def succeeded: F[Unit] = state.get.flatMap(_.members.values.toVector.traverse_(_.faults.succeeded))

  /**
   * One session, run on its own thread: every call below blocks that thread, and nothing else. It drives
   * the session's three parts on its connection: [[Notifier]] (a queue's notification), [[CancelListener]]
   * (a cancel's) and [[SessionLocks]].
   */
  private final class Session[F[_]](
      open: Resource[F, Connection],
      state: Ref[F, State[F]],
      sql: Sql,
      schema: Schema,
      checkEvery: FiniteDuration
  )(using F: Async[F]):

    private val channel = schema.channel
    private val cancelChannel = schema.cancelChannel
    private val slices = (checkEvery / waitSlice).toLong.max(1L).min(Int.MaxValue.toLong).toInt
    private val faults = new EveryMember(state)

    /**
     * A session on a new connection, until its connection fails: then no session is up (the joins and
     * leaves waiting are let go) and every member is woken, since its notifications may be lost.
     */
    def round: F[Nothing] =
      state.update(_.copy(up = true)) *> open.use(serve).onError(_ => down *> pokeAll)

    // no session acts on the joins and leaves waiting: they are let go (see State)
    def down: F[Unit] =
      state.modify(s => (s.copy(waiting = Vector.empty, up = false), s.waiting)).flatMap(_.traverse_(
        _.complete(())
      ))

    private def pokeAll: F[Unit] = state.get.flatMap(_.members.values.toVector.traverse_(Notifier.poke))

    private def serve(connection: Connection): F[Nothing] =
      val pg = connection.unwrap(classOf[PGConnection])
      def execute(statement: String): F[Int] = F.delay {
        val st = connection.createStatement()
        try
          st.execute(statement)
          st.getUpdateCount
        finally st.close()
      }
      val locks = new SessionLocks[F](sql, execute)
      val notifier = new Notifier[F](Run.inPlace[F](connection))
      // the locks follow the members; then the joins and leaves waiting go on
      def reconcile(held: SessionLocks.Held, check: Boolean): F[SessionLocks.Held] =
        state.modify(s => (s.copy(waiting = Vector.empty), s)).flatMap(s =>
          F.guarantee(locks.reconcile(held, s.members.keySet, check), s.waiting.traverse_(_.complete(())))
        )
      // a cancel interrupts its task right here, on this thread: the interruption only completes a callback
      def slice: F[Unit] =
        state.get.flatMap { s =>
          F.delay {
            val woken = Vector.newBuilder[Member[F]]
            Option(pg.getNotifications(waitSlice.toMillis.toInt)).foreach(_.foreach { n =>
              if n.getName == cancelChannel then
                CancelListener.cancelled(
                  n.getParameter,
                  s.members.valuesIterator.map(_.worker).toVector
                ): Unit
              else woken ++= s.members.valuesIterator.filter(_.worker.config.queue == n.getParameter)
            })
            woken.result().distinctBy(_.worker.owner)
          }.flatMap(_.traverse_(notifier.notified))
        }
      def rounds(held: SessionLocks.Held): F[Nothing] = (1 to slices).toVector.foldLeftM(held)((h, _) =>
        slice *> reconcile(h, check = false)
      )
        .flatMap(reconcile(_, check = true)).flatMap(rounds)
      // the session is weir's own while it holds it: its setting stays with it (and is reset before a
      // borrowed connection goes back), and like the rest of the workers' bookkeeping its writes (the locks'
      // records) need not wait for the WAL
      execute(s"SET synchronous_commit = off; LISTEN \"$channel\"; LISTEN \"$cancelChannel\"") *> pokeAll *>
        reconcile(SessionLocks.none, check = true).flatTap(_ => faults.succeeded).flatMap(rounds)

  private def thread(channel: String): ThreadFactory = runnable =>
    val t = new Thread(runnable, s"weir-session-$channel")
    t.setDaemon(true)
    t
