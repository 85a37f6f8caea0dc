package weir.postgres

import cats.effect.{Deferred, IO, Ref, Resource}
import cats.syntax.all.*
import com.zaxxer.hikari.{HikariConfig, HikariDataSource}
import doobie.*
import doobie.implicits.*
import weir.{InvalidSettings, Pipeline}
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * The connections a process holds: the workers of one `Database` share their pools and one session, so
 * the count in `pg_stat_activity` is `poolSize + workerPoolSize + 3` with one queue or ten; on a pool of
 * the user's, weir holds none of its own and never closes the user's.
 */
class ConnectionsSuite extends DbSuite:

  override def munitIOTimeout: Duration = 120.seconds

  private val queues = (1 to 10).map(i => s"q$i").toVector

  /** A URL whose connections show as `name` in `pg_stat_activity`. */
  private def named(name: String): String =
    TestDatabase.url + (if TestDatabase.url.contains("?") then "&" else "?") + s"ApplicationName=$name"

  /** The sessions named `name` in the test JVM's database (another JVM's tests may share the server). */
  private def backends(name: String): IO[Long] =
    sql"SELECT count(*) FROM pg_stat_activity WHERE application_name = $name AND datname = current_database()"
      .query[Long].unique.transact(TestDatabase.admin)

  /** Waits until `name` has `expected` backends (pools fill in the background), failing after 20 s. */
  private def settlesAt(name: String, expected: Long): IO[Unit] =
    Eventually.until(s"$expected connection(s) of $name", backends(name), 20.seconds, 100.millis)(_ ==
      expected).void

  private def config(queue: String): WorkerConfig =
    TestWorkers.config(queue).copy(stopWhenEmpty = false, pollInterval = 1.second)

  /** Workers of `db` on `qs`, each handling its tasks at once. */
  private def workers(
      db: Database[IO],
      qs: Vector[String],
      configOf: String => WorkerConfig = config
  ): Resource[IO, Vector[DurableWorker[IO, Int]]] =
    qs.traverse(q => DurableWorker.start[IO, Int, Unit](db, configOf(q))(Pipeline(_).process(_ => IO.unit)))

  /** Enqueues `n` tasks on each of `qs` and waits until every one has completed. */
  private def served(db: Database[IO], qs: Vector[String], n: Int): IO[Unit] =
    val total = Rows.count(db, "finished", "state = 'completed'")
    total.flatMap(before =>
      qs.traverse_(q => TaskQueue[IO, Int](db, q).enqueueMany((1 to n).map(NewTask(_))).void) *>
        Eventually.until(s"${qs.size * n} completions after $before", total)(_ ==
          before + qs.size.toLong * n).void.handleErrorWith(e =>
          whereTasksAre(db).flatMap(where => IO.raiseError(new AssertionError(s"${e.getMessage}; $where", e)))
        )
    )

  /** Where the tasks of `db` are, by queue and state (with their owner): what a failed wait shows. */
  private def whereTasksAre(db: Database[IO]): IO[String] =
    Rows.query[(String, String, Option[Long], Long)](
      s"""SELECT queue, state::text, lease_owner, count(*) FROM ${db.schema("tasks")} GROUP BY 1, 2, 3
          UNION ALL SELECT queue, 'finished ' || state::text, NULL, count(*) FROM ${db.schema("finished")}
          GROUP BY 1, 2 ORDER BY 1, 2"""
    ).map(rows => "tasks (queue, state, owner, count): " + rows.mkString(", "))

  withDb(
    "the workers of ten queues hold poolSize + workerPoolSize + 3 connections, as one queue's do, and + 2 when none listens"
  ) {
    db =>
      val name = s"weir_count_${ProcessHandle.current().pid()}"
      val settings = TestDatabase.config(db.schema).copy(url = named(name), poolSize = 3, workerPoolSize = 2)
      val expected = (settings.poolSize + settings.workerPoolSize + Database.maintenancePoolSize + 1).toLong
      Database.connect[IO](settings).use { own =>
        for
          _ <- settlesAt(name, settings.poolSize.toLong)
          _ <- workers(own, queues.take(1)).use(_ =>
            settlesAt(name, expected) *> served(own, queues.take(1), 20)
          )
          _ <- workers(own, queues).use(ws =>
            settlesAt(name, expected) *> served(own, queues, 20) *>
              backends(name).map(n => assertEquals(n, expected)) *>
              lockHolders(db.schema).map(holders =>
                // one backend holds every worker's lock: the process's death frees them all at once
                assertEquals(holders.map(_._1).sorted, ws.map(_.id).sorted)
                assertEquals(holders.map(_._2).distinct.size, 1, holders.toString)
              )
          )
          // the last worker's release closes what the workers shared
          _ <- settlesAt(name, settings.poolSize.toLong)
          // workers that do not listen open no session
          _ <- queues.take(2).traverse(q =>
            DurableWorker.start[IO, Int, Unit](own, config(q).copy(listen = false))(Pipeline(_).process(_ =>
              IO.unit
            ))
          ).use(_ => settlesAt(name, expected - 1) *> served(own, queues.take(2), 20))
        yield ()
      } *> settlesAt(name, 0L)
  }

  /** `(worker id, backend pid)` of every session lock of `schema` held now. */
  private def lockHolders(schema: Schema): IO[Vector[(Long, Int)]] =
    Rows.query[(Long, Int)](
      s"""SELECT objid::bigint, pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
          AND classid = ${schema.sessionLockClass}"""
    )

  withDb("a cancel reaches a running task of one of ten queues sharing the session, by notification") { db =>
    // heartbeats 30 s apart: within the 10 s the run is given, only the notification can have told the worker
    val slow =
      TestWorkers.config("q10").copy(heartbeat = 30.seconds, deadAfter = 90.seconds, lease = 120.seconds)
    for
      id <- TaskQueue[IO, String](db, "q10").enqueue(NewTask("slow")).map(_.taskId)
      started <- Deferred[IO, Unit]
      finalized <- Ref[IO].of(false)
      stats <- workers(db, queues.take(9)).use(_ =>
        TestWorkers.statsAfterRun(
          DurableWorker.start[IO, String, Unit](db, slow)(
            Pipeline(_).process(_ => (started.complete(()) *> IO.never[Unit]).onCancel(finalized.set(true)))
          ).evalTap(_ => started.get.timeout(30.seconds) *> TaskAdmin(db).tasks.cancel(id, "runaway").void)
        ).timeout(10.seconds)
      )
      done <- finalized.get
      states <- Rows.finished(db)
    yield
      assert(done, "the handler's finalizer did not run")
      assertEquals(stats.cancelled, 1L)
      assertEquals(states.map(_._2), Vector("cancelled"))
  }

  /** A HikariCP pool of the test's own, as a service would have, showing as `name`. */
  private def userPool(name: String, size: Int): Resource[IO, HikariDataSource] =
    Resource.make(IO.blocking {
      val hikari = new HikariConfig()
      // the server's URL may be libpq's form (WEIR_TEST_DATABASE_URL): HikariCP takes only JDBC's
      val (jdbc, props) = DatabaseConfig.toJdbc(named(name))
      hikari.setJdbcUrl(jdbc)
      hikari.setDataSourceProperties(props)
      hikari.setMaximumPoolSize(size)
      // as many services set it: weir's connections must still commit what they run in autocommit
      hikari.setAutoCommit(false)
      new HikariDataSource(hikari)
    })(ds => IO.blocking(ds.close()))

  withDb("on the user's DataSource, ten queues' workers run on its connections alone, and it is left open") {
    db =>
      val name = s"weir_user_${ProcessHandle.current().pid()}"
      userPool(name, size = 6).use { ds =>
        for
          _ <- Database.fromDataSource[IO](ds, db.schema).use(on =>
            workers(on, queues).use(_ =>
              served(on, queues, 20) *> backends(name).map(n => assert(n <= 6L, s"$n connections")) *>
                // the test's own Database (TestDatabase.config: a pool of 4) is the only one with weir's name
                backends("weir").map(n => assert(n <= 4L, s"weir opened connections of its own: $n"))
            )
          )
          // still the user's: open, and its connections keep no LISTEN, lock or setting of the session
          _ <- IO(assert(!ds.isClosed, "weir closed the user's pool"))
          // every connection of the pool at once (all 6 held), so the session's is among them
          left <- Resource.make(IO.blocking(Vector.fill(6)(ds.getConnection)))(cs =>
            IO.blocking(cs.foreach(_.close()))
          ).use(cs =>
            IO.blocking(cs.map { c =>
              val st = c.createStatement()
              try
                val rs = st.executeQuery(
                  "SELECT (SELECT count(*) FROM pg_listening_channels()), " +
                    "(SELECT setting = reset_val FROM pg_settings WHERE name = 'synchronous_commit'), " +
                    "pg_backend_pid()"
                )
                rs.next()
                (rs.getLong(1), rs.getBoolean(2), c.getNetworkTimeout, rs.getInt(3))
              finally st.close()
            })
          )
        yield
          assertEquals(left.map(_._4).distinct.size, 6)
          left.foreach((channels, settingReset, timeout, _) =>
            assertEquals(channels, 0L)
            assert(settingReset, "the session's synchronous_commit outlived it")
            assertEquals(timeout, 0)
          )
      }
  }

  withDb("on the user's doobie Transactor, the workers of three queues complete their tasks") { db =>
    val (jdbc, props) = DatabaseConfig.toJdbc(TestDatabase.url)
    // a connection per transaction (DriverManager: no pool), each a TLS handshake on a server that offers
    // it: a few tasks per queue show the workers run on it, as many would
    val xa = Transactor.fromDriverManager[IO]("org.postgresql.Driver", jdbc, props, None)
    // and a connection per heartbeat and rescue: at the suites' usual 200 ms heartbeat, three workers opened
    // about 90 a second, which a loaded machine could not keep up with before the wait ran out; a heartbeat
    // a second leaves the claims and results room
    val relaxed =
      (q: String) => config(q).copy(heartbeat = 1.second, deadAfter = 15.seconds, lease = 1.minute)
    Database.fromTransactor[IO](xa, db.schema).use(on =>
      workers(on, queues.take(3), relaxed).use(_ => served(on, queues.take(3), 5))
    )
  }

  test("a DataSource that cannot reach its server fails with DatabaseUnreachable") {
    val ds = new org.postgresql.ds.PGSimpleDataSource()
    ds.setURL("jdbc:postgresql://localhost:1/nowhere")
    ds.setConnectTimeout(1)
    Database.fromDataSource[IO](ds).use_.attempt.map {
      case Left(e: DatabaseUnreachable) => assert(e.getMessage.contains("PGSimpleDataSource"), e.getMessage)
      case other => fail(s"expected DatabaseUnreachable, got $other")
    }
  }

  test("settings of a user's pool are checked when used, every bad value named") {
    for
      ds <- Database.fromDataSource[IO](null, Schema("Bad Name"), readTimeout = Duration.Zero).use_.attempt
      xa <- Database.fromTransactor[IO](null, Schema.default, readTimeout = -1.second).use_.attempt
    yield
      ds match
        case Left(e: InvalidSettings) =>
          assertEquals(e.errors.size, 3, e.getMessage)
          assert(e.getMessage.contains("dataSource must be set, was: null"), e.getMessage)
        case other => fail(s"expected InvalidSettings, got $other")
      xa match
        case Left(e: InvalidSettings) =>
          assertEquals(e.errors.size, 2, e.getMessage)
          assert(e.getMessage.contains("readTimeout must be > 0, was: -1 second"), e.getMessage)
        case other => fail(s"expected InvalidSettings, got $other")
  }
