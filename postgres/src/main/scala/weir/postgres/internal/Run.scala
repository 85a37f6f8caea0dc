package weir.postgres.internal

import cats.data.Kleisli
import cats.effect.kernel.{Async, Resource}
import doobie.*
import doobie.free.KleisliInterpreter
import doobie.implicits.*
import doobie.util.log.LogHandler
import doobie.util.transactor.Strategy

import java.util.concurrent.{Executors, ThreadFactory}
import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.ExecutionContext

/**
 * Runs weir's own transactions: each one, from taking a pooled connection to its commit, on a thread of a
 * small JDBC pool of weir's own, with one hand-off there and one back. doobie's standard interpreter hands
 * every JDBC call (prepare, bind, execute, read, commit…) to Cats Effect's blocking pool and back; for the
 * short statements of a worker those hand-offs, not the database, were most of each transaction's time.
 * Inside `apply` the calls block the JDBC thread they run on, which is what that pool is for.
 *
 * Users' own `ConnectionIO`s keep going through [[weir.postgres.Database.transactor]], doobie's standard
 * transactor on the same connection pool.
 */
private[postgres] trait Run[F[_]]:

  /** Runs `program` in a transaction of its own. */
  def apply[A](program: ConnectionIO[A]): F[A]

  /**
   * Runs `program`, a single statement, in autocommit: the server commits it when it ends, in the same
   * round trip, where [[apply]] needs a second one for the commit. The statement itself must ask for an
   * asynchronous commit if it wants one (`set_config('synchronous_commit', 'off', true)`): the pool's
   * commit step does not run.
   */
  def single[A](program: ConnectionIO[A]): F[A]

private[postgres] object Run:

  /** Transactions of `transactor` run on `ec`, the JDBC pool's threads. */
  private final class Pooled[F[_]](transactor: Transactor[F], ec: ExecutionContext)(using F: Async[F])
      extends Run[F]:
    private val autocommit = transactor.copy(strategy0 = Strategy.void)
    def apply[A](program: ConnectionIO[A]): F[A] = F.evalOn(program.transact(transactor), ec)
    def single[A](program: ConnectionIO[A]): F[A] = F.evalOn(program.transact(autocommit), ec)

  /** A `Run` over `transactor`'s connections, with a JDBC thread pool that is shut down on release. */
  def resource[F[_]](transactor: Transactor[F], name: String)(using F: Async[F]): Resource[F, Run[F]] =
    Resource
      .make(F.delay(Executors.newCachedThreadPool(threads(name))))(pool => F.delay(pool.shutdown()))
      .map { pool =>
        val direct = new Direct[F]
        new Pooled(
          transactor.copy(interpret0 = direct.ConnectionInterpreter),
          ExecutionContext.fromExecutor(pool)
        )
      }

  /**
   * Runs programs on `connection`, outside any pool, in autocommit, each JDBC call in place on the calling
   * thread: for a connection of the caller's own whose thread may block (the worker's session).
   */
  def inPlace[F[_]](connection: java.sql.Connection)(using F: Async[F]): Transactor[F] =
    Transactor.fromConnection[F](connection, None)
      .copy(interpret0 = new Direct[F].ConnectionInterpreter, strategy0 = Strategy.void)

  /** Interprets each JDBC call in place, on the calling thread (a JDBC thread, see [[Run.apply]]). */
  private final class Direct[M[_]](using M: Async[M])
      extends KleisliInterpreter[M](LogHandler.noop[M])(using WeakAsync.doobieWeakAsyncForAsync[M]):
    override def primitive[J, A](f: J => A): Kleisli[M, J, A] = Kleisli(j => M.delay(f(j)))

  private def threads(name: String): ThreadFactory =
    val count = new AtomicInteger
    runnable =>
      val t = new Thread(runnable, s"weir-jdbc-$name-${count.incrementAndGet()}")
      t.setDaemon(true)
      t
