package weir.postgres

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import org.scalacheck.Gen
import org.scalacheck.rng.Seed
import weir.Pipeline
import weir.postgres.internal.{HeaderCodec, Sql}

import java.sql.{Connection, DriverManager}

/** Headers from enqueue to the handler, through every path a task's row takes, and across the migration. */
class HeadersSuite extends DbSuite:

  private def run[A](db: Database[IO], io: ConnectionIO[A]): IO[A] = io.transact(db.transactor)

  /** Header sets drawn from a fixed seed (a failure names a set that can be drawn again), every third empty. */
  private def drawn(n: Int, seed: Long): Vector[Map[String, String]] =
    Iterator
      .iterate(Seed(seed))(_.next)
      .map(s => HeaderGen.headers(Gen.Parameters.default, s))
      .collect { case Some(h) => h }
      .take(n)
      .toVector
      .zipWithIndex
      .map((h, i) => if i % 3 == 0 then Map.empty else h)

  /** Runs a worker over `queue` until it is empty; returns the headers each attempt of each payload saw. */
  private def work(db: Database[IO], queue: String)(fail: Job[Int] => Boolean)
      : IO[Map[Int, Vector[Map[String, String]]]] =
    Ref[IO].of(Map.empty[Int, Vector[Map[String, String]]]).flatMap { seen =>
      DurableWorker
        .start[IO, Int, Unit](db, TestWorkers.config(queue)) { source =>
          Pipeline(source).process { job =>
            seen.update(m => m.updated(job.payload, m.getOrElse(job.payload, Vector.empty) :+ job.headers)) *>
              IO.raiseError(new RuntimeException("first attempt")).whenA(fail(job))
          }
        }
        .use(_.running.join) *> seen.get
    }

  withDb("headers reach the handler as enqueued, alone, in batches and with unique keys, on every attempt") {
    db =>
      val queue = TaskQueue[IO, Int](db, "h")
      val sets = drawn(90, 20261126L)
      // one task per set: the first third enqueued alone, the second in a plain batch, the last in a batch
      // with unique keys (another statement)
      val tasks = sets.zipWithIndex.map((h, i) => NewTask(i, headers = h))
      val (alone, rest) = tasks.splitAt(30)
      val (plain, unique) = rest.splitAt(30)
      for
        _ <- alone.traverse_(queue.enqueue)
        _ <- queue.enqueueMany(plain)
        _ <- queue.enqueueMany(unique.map(t => t.copy(uniqueKey = Some(s"u${t.payload}"))))
        emptyStored <- Rows.count(db, "tasks", "headers IS NULL")
        // every payload divisible by 4 fails its first attempt and runs again
        seen <- work(db, "h")(job => job.payload % 4 == 0 && job.attempt == 1)
        kept <- Fragment
          .const(s"SELECT payload::int, headers::text FROM ${db.schema("finished")} ORDER BY id")
          .query[(Int, Option[String])]
          .to[Vector]
          .transact(TestDatabase.admin)
      yield
        assertEquals(emptyStored, sets.count(_.isEmpty).toLong, "a task without headers stores NULL")
        assertEquals(seen.keySet, sets.indices.toSet)
        sets.zipWithIndex.foreach { (h, i) =>
          val attempts = if i % 4 == 0 then 2 else 1
          assertEquals(seen(i), Vector.fill(attempts)(h), s"task $i")
        }
        assertEquals(kept.size, sets.size)
        kept.foreach((i, json) => assertEquals(HeaderCodec.decode(json), Right(sets(i)), s"finished task $i"))
  }

  withDb("headers survive a retry, a rescue, death, a hand-back, cancel and TaskAdmin.retry") { db =>
    val sql = new Sql(db.schema)
    val queue = TaskQueue[IO, Int](db, "r")
    val headers =
      Map("traceparent" -> "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tenant" -> "ü-7")
    // jsonb keeps its own spacing and key order: compared as headers, not as text
    def read(c: Sql.Claimed) = HeaderCodec.decode(c.headers).toOption
    def claimOne(owner: Long) = run(db, sql.claim("r", owner, 10, 60000).map(_.rows)).map(_.toList)
    def finishedHeaders(id: Long) = Fragment
      .const(s"SELECT headers::text FROM ${db.schema("finished")} WHERE id = $id")
      .query[Option[String]]
      .unique
      .transact(TestDatabase.admin)
      .map(HeaderCodec.decode)
    for
      id <- queue.enqueue(NewTask(1, maxAttempts = 3, headers = headers)).map(_.taskId)
      _ <- queue.enqueue(NewTask(2))
      owner <- run(db, sql.register("w", 1000))
      first <- claimOne(owner)
      _ <- run(db, sql.complete(first.drop(1).map(_.token).toArray, keep = false, keyed = false))
      // the task with headers fails and is retried at once
      _ <- run(db, sql.fail(Array(first.head.token), Array("boom"), Array(0L)))
      second <- claimOne(owner)
      // its worker dies holding it: rescued
      _ <- Rows.exec(s"DELETE FROM ${db.schema("workers")} WHERE id = $owner")
      rescued <- run(db, sql.rescue(10000, 1000, leases = true))
      other <- run(db, sql.register("other", 1000))
      third <- claimOne(other)
      // its last attempt fails: dead, then put back by hand
      _ <- run(db, sql.fail(Array(third.head.token), Array("boom"), Array(0L)))
      deadHeaders <- finishedHeaders(id)
      back <- TaskAdmin(db).tasks.retry(id)
      fourth <- claimOne(other)
      // handed back unstarted, then cancelled while it waits, then put back again
      _ <- run(db, sql.handBack(Array(fourth.head.token)))
      cancelled <- TaskAdmin(db).tasks.cancel(id)
      cancelledHeaders <- finishedHeaders(id)
      _ <- TaskAdmin(db).tasks.retry(id)
      fifth <- claimOne(other)
    yield
      assertEquals(first.map(c => (c.id, read(c))), List((id, Some(headers)), (id + 1, Some(Map.empty))))
      assertEquals(second.map(c => (c.id, c.attempt, read(c))), List((id, 2, Some(headers))))
      assertEquals(rescued, (1, 0, 0))
      assertEquals(third.map(c => (c.id, c.attempt, read(c))), List((id, 3, Some(headers))))
      assertEquals(deadHeaders, Right(headers))
      assertEquals(back, Retry.Retried)
      assertEquals(fourth.map(c => (c.id, c.attempt, read(c))), List((id, 1, Some(headers))))
      assertEquals((cancelled, cancelledHeaders), (Cancel.Cancelled, Right(headers)))
      assertEquals(fifth.map(c => (c.id, c.attempt, read(c))), List((id, 1, Some(headers))))
  }

  withDb(
    "the SQL function stores headers, an empty object as none, and the schema refuses anything but strings"
  ) {
    db =>
      val f = db.schema("enqueue")
      def refused(headers: String) =
        Rows.enqueueSql(s"""$f('s', '1', headers => '$headers')""").attempt.map {
          case Left(e: java.sql.SQLException) => assertEquals(e.getSQLState, "23514", s"$headers: $e")
          case other => fail(s"headers $headers were stored: $other")
        }
      for
        _ <-
          Rows.enqueueSql(s"""$f('s', '1', headers => '{"tenant": "t-1", "traceparent": "00-ab-cd-01"}')""")
        _ <- Rows.enqueueSql(s"""$f('s', '2', headers => '{}')""")
        _ <- Rows.enqueueSql(s"""$f('s', '3')""")
        _ <-
          List("""{"a": 1}""", """{"a": null}""", """["a"]""", """"a"""", """{"": "x"}""").traverse_(refused)
        nulls <- Rows.count(db, "tasks", "headers IS NULL")
        seen <- work(db, "s")(_ => false)
      yield
        assertEquals(nulls, 2L)
        assertEquals(
          seen,
          Map(
            1 -> Vector(Map("tenant" -> "t-1", "traceparent" -> "00-ab-cd-01")),
            2 -> Vector(Map.empty),
            3 -> Vector(Map.empty)
          )
        )
  }

  /**
   * A connection as the previous release's worker holds it: every statement prepared on the server at its
   * first run, so that the migration must not break a statement planned before it.
   */
  private def previousRelease: Resource[IO, Connection] =
    Resource.make(IO.blocking {
      val (jdbc, props) = DatabaseConfig.toJdbc(TestDatabase.url)
      props.setProperty("prepareThreshold", "1")
      DriverManager.getConnection(jdbc, props)
    })(c => IO.blocking(c.close()))

  test(
    "the previous release's enqueues and claims work across the migration, and its tasks have no headers"
  ) {
    val schema = TestDatabase.freshSchema()
    val config = TestDatabase.config(schema)
    val (enqueueSql, insertSql, claimSql) = (
      // the statements of version 4's Sql, as that release sends them
      s"SELECT task_id, inserted FROM ${schema("enqueue")}(?, ?::jsonb, ?, now() + ? * interval '1 millisecond', ?, ?, ?)",
      s"INSERT INTO ${schema("tasks")} (queue, payload, priority, run_at, max_attempts, ordering_key, head) " +
        "SELECT ?, payload::jsonb, 0, now(), 20, NULL, true FROM unnest(?::text[]) AS i(payload) RETURNING id",
      s"SELECT c.* FROM set_config('synchronous_commit', 'off', true) AS async, ${schema("claim")}(?, ?, ?, ?) AS c"
    )
    def oldEnqueue(c: Connection, payload: Int): IO[Unit] = IO.blocking {
      val st = c.prepareStatement(enqueueSql)
      try
        st.setString(1, "m"); st.setString(2, payload.toString); st.setInt(3, 0); st.setLong(4, 0L)
        st.setInt(5, 20); st.setNull(6, java.sql.Types.VARCHAR); st.setNull(7, java.sql.Types.VARCHAR)
        val rs = st.executeQuery()
        assert(rs.next() && rs.getBoolean(2))
      finally st.close()
    }
    def oldInsert(c: Connection, payloads: Array[String]): IO[Unit] = IO.blocking {
      val st = c.prepareStatement(insertSql)
      try
        st.setString(1, "m"); st.setArray(2, c.createArrayOf("text", payloads.map(p => p: AnyRef)))
        val rs = st.executeQuery()
        var n = 0
        while rs.next() do n += 1
        assertEquals(n, payloads.length)
      finally st.close()
    }
    // the old claim's rows: (id, its columns)
    def oldClaim(c: Connection, owner: Long): IO[Vector[(Long, Int)]] = IO.blocking {
      val st = c.prepareStatement(claimSql)
      try
        st.setString(1, "m"); st.setLong(2, owner); st.setInt(3, 100); st.setLong(4, 60000L)
        val rs = st.executeQuery()
        val rows = Vector.newBuilder[(Long, Int)]
        while rs.next() do rows += ((rs.getLong("id"), rs.getMetaData.getColumnCount))
        rows.result()
      finally st.close()
    }
    val body = previousRelease.use { old =>
      for
        _ <- Database.pool[IO](config).use(db => Migrations.migrateTo(schema, 4).transact(db.transactor))
        // each statement once before the migration, so that the server holds it prepared
        owner <-
          Database.pool[IO](config).use(db => new Sql(schema).register("old", 1000).transact(db.transactor))
        _ <- oldClaim(old, owner).map(rows => assertEquals(rows, Vector.empty))
        _ <- oldEnqueue(old, 1)
        _ <- oldInsert(old, Array("2"))
        prepared <- IO.blocking {
          val st = old.createStatement()
          try
            val rs = st.executeQuery(
              "SELECT count(*) FROM pg_prepared_statements WHERE statement NOT LIKE '%pg_prepared_statements%'"
            )
            rs.next()
            rs.getInt(1)
          finally st.close()
        }
        _ <- IO(assertEquals(prepared, 3, "the old statements are prepared on the server"))
        applied <- Database.migrate[IO](config)
        _ <- oldEnqueue(old, 3)
        _ <- oldInsert(old, Array("4", "5"))
        seen <- Database.connect[IO](config).use { db =>
          for
            _ <- TaskQueue[IO, Int](db, "m").enqueue(NewTask(6, headers = Map("tenant" -> "t-6")))
            // the old worker claims everything, the task with headers included, and dies with its claims
            claimed <- oldClaim(old, owner)
            _ <- IO(assertEquals(claimed.map(_._2).distinct, Vector(8), "the old claim's columns"))
            _ <- IO(assertEquals(claimed.size, 6))
            _ <- Rows.exec(s"DELETE FROM ${schema("workers")} WHERE id = $owner")
            seen <- work(db, "m")(_ => false)
          yield seen
        }
      yield
        assertEquals(applied, (5 to Migrations.latest).toVector)
        assertEquals(
          seen,
          (1 to 5).map(_ -> Vector(Map.empty[String, String])).toMap + (6 -> Vector(Map("tenant" -> "t-6")))
        )
    }
    body.guarantee(TestDatabase.drop(schema)) *> noLeftovers
  }
