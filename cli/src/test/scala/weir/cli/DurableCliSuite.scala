package weir.cli

import cats.effect.{ExitCode, IO, Resource}
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres
import munit.CatsEffectSuite
import weir.postgres.{
  After, AuditFilter, AuditLog, Batches, Database, DatabaseConfig, NewTask, Operator, QueueRate, Schedule,
  Scheduler,
  Schema,
  TaskAdmin, TaskGraph, TaskQueue
}

class DurableCliSuite extends CatsEffectSuite:

  private val server = ResourceSuiteLocalFixture(
    "postgres",
    Resource.make(IO.blocking(EmbeddedPostgres.builder().start()))(pg => IO.blocking(pg.close()))
  )
  override def munitFixtures = List(server)

  test(
    "migrate applies the schema once, then reports it up to date; stats counts its tasks; schedules lists them"
  ) {
    val url = server().getJdbcUrl("postgres", "postgres")
    for
      first <- Main.run(List("durable", "migrate", "--url", url, "--schema", "cli_a"))
      second <- Main.run(List("durable", "migrate", "--url", url, "--schema", "cli_a"))
      stats <- Main.run(List("durable", "stats", "--url", url, "--schema", "cli_a"))
      missing <- Main.run(List("durable", "stats", "--url", url, "--schema", "cli_never_migrated"))
      noSchedules <- Main.run(List("durable", "schedules", "--url", url, "--schema", "cli_a"))
      config = DatabaseConfig(url, schema = Schema("cli_a"))
      _ <- Database.connect[IO](config).use(db =>
        Scheduler.resource(
          db,
          Vector(Schedule.cron("nightly", "0 3 * * *", queue = "reports", payload = 1))
        ).use_
      )
      schedules <- Main.run(List("durable", "schedules", "--url", url, "--schema", "cli_a"))
    yield
      assertEquals((first, second, stats), (ExitCode.Success, ExitCode.Success, ExitCode.Success))
      assertEquals((noSchedules, schedules), (ExitCode.Success, ExitCode.Success))
      assertEquals(missing, ExitCode(1))
  }

  test("pause, resume and limit change the controls every worker obeys; an unknown queue is an error") {
    val url = server().getJdbcUrl("postgres", "postgres")
    val config = DatabaseConfig(url, schema = Schema("cli_q"))
    def cli(args: String*) = Main.run("durable" :: args.toList ++ List("--url", url, "--schema", "cli_q"))
    def controls = Database.connect[IO](config).use(db => TaskAdmin(db).overview.queues)
    for
      _ <- Database.migrate[IO](config)
      _ <- Database.connect[IO](config).use(db => TaskQueue[IO, Int](db, "mail").enqueue(NewTask(1)))
      unknown <- cli("pause", "nowhere")
      paused <- cli("pause", "mail")
      whilePaused <- controls
      limited <- cli("limit", "mail", "--max-running", "3", "--rate", "2.5", "--burst", "4")
      resumed <- cli("resume", "mail")
      listed <- cli("queues")
      afterLimit <- controls
      unlimited <- cli("limit", "mail", "--no-max-running", "--no-rate")
      afterUnlimit <- controls
    yield
      assertEquals(unknown, ExitCode(1))
      assertEquals(List(paused, limited, resumed, listed, unlimited), List.fill(5)(ExitCode.Success))
      assertEquals(whilePaused.map(q => (q.name, q.paused)), Vector("mail" -> true))
      assertEquals(
        afterLimit.map(q => (q.paused, q.maxRunning, q.rate)),
        Vector((false, Some(3), Some(QueueRate(2.5, 4))))
      )
      assertEquals(afterUnlimit.map(q => (q.paused, q.maxRunning, q.rate)), Vector((false, None, None)))
  }

  test("cancel cancels a waiting task; a finished or unknown one is an error that changes nothing") {
    val url = server().getJdbcUrl("postgres", "postgres")
    val config = DatabaseConfig(url, schema = Schema("cli_c"))
    def cli(args: String*) = Main.run("durable" :: args.toList ++ List("--url", url, "--schema", "cli_c"))
    for
      _ <- Database.migrate[IO](config)
      id <- Database.connect[IO](config).use(db => TaskQueue[IO, Int](db, "mail").enqueue(NewTask(1)))
        .map(_.taskId)
      cancelled <- cli("cancel", id.toString, "--reason", "wrong recipient")
      again <- cli("cancel", id.toString)
      missing <- cli("cancel", "999999")
      stats <- Database.connect[IO](config).use(db => TaskAdmin(db).overview.stats)
    yield
      assertEquals((cancelled, again, missing), (ExitCode.Success, ExitCode(1), ExitCode(1)))
      assertEquals(stats.map(s => (s.queue, s.available, s.cancelled)), Vector(("mail", 0L, 1L)))
  }

  /** `args` run as `./weir args`: its exit code, standard output and standard error. */
  private def weir(args: List[String]): IO[(ExitCode, String, String)] = Captured(Main.run(args))

  test(
    "workflow and batch print the progress and the tasks by layer or member; --cancel cancels the unfinished ones, audited; unknown ids exit 1 with one line"
  ) {
    val url = server().getJdbcUrl("postgres", "postgres")
    val config = DatabaseConfig(url, schema = Schema("cli_w"))
    def cli(args: String*) = weir("durable" :: args.toList ++ List("--url", url, "--schema", "cli_w"))
    for
      _ <- Database.migrate[IO](config)
      ids <- Database.connect[IO](config).use { db =>
        val q = TaskQueue[IO, Int](db, "mail")
        val graph = TaskGraph.empty.add("a", q, NewTask(1))
          .add("b", q, NewTask(2), after = Vector(After.completed("a")))
          .add("c", q, NewTask(3), after = Vector(After.completed("b")))
        for
          g <- graph.enqueue(db)
          batch <- Batches(db).open(q, NewTask(0))
          members <- Batches(db).add(batch, q, (1 to 3).map(NewTask(_)))
        yield (g("a").taskId, g("b").taskId, g("c").taskId, batch.value, members.map(_.taskId))
      }
      (a, b, c, batch, members) = ids
      shown <- cli("workflow", a.toString)
      firstTwo <- cli("workflow", a.toString, "--first", "2")
      page <- cli("batch", batch.toString, "--first", "2")
      next <- cli("batch", batch.toString, "--after", members(1).toString)
      cancelled <- cli("workflow", a.toString, "--cancel", "--reason", "wrong run")
      batchCancelled <- cli("batch", batch.toString, "--cancel", "--as", "alice")
      asWithoutCancel <- cli("workflow", a.toString, "--as", "bob")
      after <- cli("workflow", a.toString)
      unknown <- cli("workflow", "999999")
      unknownBatch <- cli("batch", "999999")
      audit <- Database.connect[IO](config).use(db => AuditLog(db).entries(AuditFilter(task = Some(c))))
      memberAudit <- Database.connect[IO](config).use(db =>
        AuditLog(db).entries(AuditFilter(task = Some(members.head)))
      )
    yield
      assertEquals(shown._1, ExitCode.Success)
      assert(shown._2.startsWith(s"workflow $a: 3 tasks (1 available, 2 waiting), 3 unfinished\n"), shown._2)
      val lines = shown._2.linesIterator.toVector
      assert(lines(1).trim.startsWith("layer"), shown._2)
      assertEquals(
        lines.drop(2).map(_.trim.split(" +").take(4).toVector),
        Vector(
          Vector("0", a.toString, "mail", "available"),
          Vector("1", b.toString, "mail", "waiting"),
          Vector("2", c.toString, "mail", "waiting")
        )
      )
      assert(firstTwo._2.contains("(the first 2 of 3 tasks; --first N lists more)"), firstTwo._2)
      assert(
        page._2.startsWith(s"batch $batch: 3 members (0 completed, 0 dead, 0 cancelled), open, 3 pending"),
        page._2
      )
      assert(page._2.contains(s"more: --after ${members(1)}"), page._2)
      assertEquals(
        next._2.linesIterator.drop(2).map(_.trim.split(" +").head).toVector,
        Vector(members(2).toString)
      )
      assertEquals(
        cancelled,
        (ExitCode.Success, s"workflow $a: 3 cancelled, 0 running told to stop, 0 had ended\n", "")
      )
      assertEquals(
        batchCancelled._2,
        s"batch $batch: closed; 3 cancelled, 0 running told to stop, 0 had ended\n"
      )
      assert(after._2.startsWith(s"workflow $a: 3 tasks (3 cancelled), ended"), after._2)
      assertEquals((unknown._1, unknownBatch._1), (ExitCode(1), ExitCode(1)))
      assert(
        unknown._3.startsWith("Error: unknown workflow 999999:") && unknown._3.linesIterator.size == 1,
        unknown._3
      )
      assert(unknownBatch._3.startsWith("Error: unknown batch 999999:"), unknownBatch._3)
      // without --as, the OS user acts; with it, the name it gives; both in the session `cli`
      assertEquals(
        audit.map(e => (e.operator, e.detail)),
        Vector((Operator(sys.props("user.name"), Some("cli")), Some("wrong run")))
      )
      assertEquals(memberAudit.map(_.operator), Vector(Operator("alice", Some("cli"))))
      assertEquals(asWithoutCancel._1, ExitCode(2))
      assert(asWithoutCancel._3.contains("--as 'bob' needs --cancel"), asWithoutCancel._3)
  }

  test("workflow and batch refuse a bad id with exit code 2, naming it") {
    val url = "postgresql://h/db"
    for
      word <- weir(List("durable", "workflow", "seven", "--url", url))
      zero <- weir(List("durable", "batch", "0", "--url", url))
      reasonAlone <- weir(List("durable", "workflow", "3", "--reason", "x", "--url", url))
      badFirst <- weir(List("durable", "batch", "3", "--first", "0", "--url", url))
    yield
      assertEquals(List(word._1, zero._1, reasonAlone._1, badFirst._1), List.fill(4)(ExitCode(2)))
      assert(word._3.contains("seven"), word._3)
      assert(zero._3.contains("BATCH must be > 0, was: 0"), zero._3)
      assert(reasonAlone._3.contains("--reason 'x' needs --cancel"), reasonAlone._3)
      assert(badFirst._3.contains("--first must be in 1..10000, was: 0"), badFirst._3)
  }

  test("bad arguments are refused with exit code 2") {
    for
      noCommand <- Main.run(List("durable", "--url", "postgresql://h/db"))
      badSchema <- Main.run(List("durable", "stats", "--url", "postgresql://h/db", "--schema", "Bad;"))
      unknown <- Main.run(List("durable", "stats", "--frobnicate"))
      zeroLimit <- Main.run(List("durable", "limit", "q", "--max-running", "0", "--url", "postgresql://h/db"))
      nanRate <- Main.run(List("durable", "limit", "q", "--rate", "NaN", "--url", "postgresql://h/db"))
      nothingToSet <- Main.run(List("durable", "limit", "q", "--url", "postgresql://h/db"))
      burstAlone <- Main.run(List("durable", "limit", "q", "--burst", "3", "--url", "postgresql://h/db"))
      noQueue <- Main.run(List("durable", "pause", "--url", "postgresql://h/db"))
      noTask <- Main.run(List("durable", "cancel", "--url", "postgresql://h/db"))
      badTask <- Main.run(List("durable", "cancel", "seven", "--url", "postgresql://h/db"))
      emptyReason <- Main.run(List("durable", "cancel", "7", "--reason", "", "--url", "postgresql://h/db"))
      emptyAs <- Main.run(List("durable", "pause", "q", "--as", " ", "--url", "postgresql://h/db"))
    yield assertEquals(
      List(
        noCommand,
        badSchema,
        unknown,
        zeroLimit,
        nanRate,
        nothingToSet,
        burstAlone,
        noQueue,
        noTask,
        badTask,
        emptyReason,
        emptyAs
      ),
      List.fill(12)(ExitCode(2))
    )
  }
