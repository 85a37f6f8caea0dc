package weir.postgres

import cats.effect.{Deferred, IO, Ref, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import org.typelevel.log4cats.LoggerFactory
import weir.{Limit, Pipeline}
import weir.testing.RecordedLogs
import weir.testkit.Eventually

import java.nio.charset.StandardCharsets
import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * Rolling upgrades: workers of the previous release (this library with its migrations cut at the previous
 * version, so that its check believes that version is its own) keep running, and start, while another
 * process migrates to the newest version; a newer migration that is not compatible makes them refuse.
 */
class UpgradeSuite extends DbSuite:

  override def munitIOTimeout: Duration = 3.minutes

  private val previous = Migrations.latest - 1

  /** The release before this one, as far as the schema check goes: it knows migrations 1 to `previous`. */
  private val pinned = Migrations.current.pinnedAt(previous)

  /** A pool checked as `release`'s `Database.connect` checks it (same check, same logging). */
  private def connectAs(release: Migrations.Release, config: DatabaseConfig)(using
      LoggerFactory[IO]
  ): Resource[IO, Database[IO]] =
    Database.pool[IO](config).evalTap(Database.checkSchema(_, release))

  /** Runs `release`'s migrate on `config`'s schema, in this JVM. */
  private def migrateAs(release: Migrations.Release, config: DatabaseConfig): IO[Vector[Int]] =
    Database.pool[IO](config).use(db => release.migrate(config.schema).transact(db.transactor))

  /** Another process: a child JVM runs this release's `Database.migrate`; returns the versions it applied. */
  private def migrateInChild(config: DatabaseConfig): IO[Vector[Int]] =
    val command =
      ChildCommand("weir.postgres.MigrateProcess", heapMiB = 256, List(TestDatabase.url, config.schema.name))
    Resource
      .make(IO.blocking(new ProcessBuilder(command*).redirectErrorStream(true).start()))(p =>
        IO.blocking(p.destroyForcibly().waitFor()).void
      )
      .use { p =>
        for
          output <- IO.interruptible(new String(p.getInputStream.readAllBytes(), StandardCharsets.UTF_8))
          exited <- IO.interruptible(p.waitFor(2, TimeUnit.MINUTES))
        yield
          assert(exited && p.exitValue() == 0, s"the migrating process failed:\n$output")
          val line =
            output.linesIterator.find(_.startsWith("applied")).getOrElse(fail(s"no result:\n$output"))
          line.stripPrefix("applied").trim.split(",").filter(_.nonEmpty).map(_.toInt).toVector
      }

  /** Polls `condition` until it holds; fails naming `what` past the deadline. */
  private def eventually(
      what: String,
      within: FiniteDuration = 60.seconds
  )(condition: IO[Boolean]): IO[Unit] =
    Eventually.until(what, condition, within, every = 20.millis)(identity).void

  private def answers(schema: Schema): IO[Vector[(Int, Option[Boolean])]] =
    Rows.query[(Int, Option[Boolean])](
      s"SELECT version, compatible_with_previous FROM ${schema("migrations")} ORDER BY version"
    )

  private val config = TestWorkers.config("upgrade").copy(stopWhenEmpty = false)

  test(
    "workers of the previous release keep completing tasks while another process migrates to the newest; each task runs and completes once"
  ) {
    val schema = TestDatabase.freshSchema()
    val dbConfig = TestDatabase.config(schema)
    val batch = 150
    val gated = 4
    val body =
      for
        applied <- migrateAs(pinned, dbConfig)
        _ = assertEquals(applied, (1 to previous).toVector)
        logs <- RecordedLogs()
        runs <- Ref[IO].of(Vector.empty[(Long, String)])
        gate <- Deferred[IO, Unit]
        trickled <- Ref[IO].of(Vector.empty[Long])
        // a worker of the given release; its handler records each run, and a task of payload 0 waits for the gate
        worker = (db: Database[IO], who: String) =>
          DurableWorker.start[IO, Int, Unit](db, config) { source =>
            Pipeline(source)
              .process(job => runs.update(_ :+ (job.id, who)) *> gate.get.whenA(job.payload == 0))
              .withLimit(Limit.fixed(8))
          }
        completed = (ids: Vector[Long]) =>
          Rows
            .query[Long](s"SELECT count(*) FROM ${schema("finished")} WHERE id IN (${ids.mkString(", ")})")
            .map(_.head == ids.size.toLong)
        ids <- {
          given LoggerFactory[IO] = logs
          connectAs(pinned, dbConfig).use { old =>
            val oldQueue = TaskQueue[IO, Int](old, "upgrade")
            (worker(old, "old"), worker(old, "old")).tupled.use { _ =>
              for
                // the first `gated` tasks are claimed and held, their handlers running, across the migration
                before <- oldQueue
                  .enqueueMany((1 to batch).map(i => NewTask(if i <= gated then 0 else i)))
                  .map(_.map(_.taskId))
                _ <- eventually("the gated tasks running")(
                  runs.get.map(rs => before.take(gated).toSet.subsetOf(rs.map(_._1).toSet))
                )
                // while another process migrates, an old producer keeps enqueueing and the old workers working
                trickle = IO.uncancelable(_ =>
                  oldQueue.enqueue(NewTask(-1)).flatMap(e => trickled.update(_ :+ e.taskId))
                ) *> IO.sleep(10.millis)
                migrated <- trickle.foreverM.background.surround(migrateInChild(dbConfig))
                _ = assertEquals(migrated, Vector(Migrations.latest))
                doneAtExit <- Rows.query[Long](s"SELECT id FROM ${schema("finished")}")
                during <- trickled.get
                _ = assert(
                  during.exists(doneAtExit.contains),
                  s"no task enqueued while the other process ran completed before it exited: ${during.size} enqueued"
                )
                _ <- gate.complete(()).void
                _ <- eventually("the first tasks completed")(completed(before ++ during))
                // an old process that (re)starts now accepts the newer schema, and works beside the others
                afterOld <- connectAs(pinned, dbConfig).use { restarted =>
                  worker(restarted, "old").use { _ =>
                    for
                      ids <- TaskQueue[IO, Int](restarted, "upgrade")
                        .enqueueMany((1 to batch).map(NewTask(_)))
                        .map(_.map(_.taskId))
                      _ <- eventually("the tasks enqueued after the migration completed")(completed(ids))
                    yield ids
                  }
                }
                // then a process of the new release joins them: both serve the queue
                afterNew <- connectAs(Migrations.current, dbConfig).use { fresh =>
                  worker(fresh, "new").use { _ =>
                    for
                      fromNew <- TaskQueue[IO, Int](fresh, "upgrade")
                        .enqueueMany((1 to batch).map(NewTask(_)))
                        .map(_.map(_.taskId))
                      fromOld <- oldQueue.enqueueMany((1 to batch).map(NewTask(_))).map(_.map(_.taskId))
                      _ <- eventually("the tasks of both releases completed")(completed(fromNew ++ fromOld))
                    yield fromNew ++ fromOld
                  }
                }
              yield (before ++ during, afterOld, afterNew)
            }
          }
        }
        (before, afterOld, afterNew) = ids
        all = before ++ afterOld ++ afterNew
        recorded <- runs.get
        finished <- Rows.query[(Long, String, Int)](
          s"SELECT id, state::text, attempt FROM ${schema("finished")} ORDER BY id"
        )
        left <- Rows.query[Long](s"SELECT count(*) FROM ${schema("tasks")}").map(_.head)
        lines <- logs.lines
        flags <- answers(schema)
      yield
        assertEquals(all.distinct.size, all.size)
        assert(all.size > 4 * batch, all.size)
        // every task ran once and completed once, at its first attempt
        assertEquals(recorded.map(_._1).sorted, all.sorted)
        assertEquals(finished, all.sorted.map(id => (id, "completed", 1)))
        assertEquals(left, 0L)
        // the old workers ran every task enqueued after the migration before the new release joined
        assertEquals(recorded.filter(r => afterOld.contains(r._1)).map(_._2).distinct, Vector("old"))
        // the old release's check accepted the newer schema once, at WARN, naming both versions
        assertEquals(lines.map(l => (l.level, l.logger)), Vector(("WARN", "weir.postgres.schema")))
        assert(lines.head.message.contains(s"version ${Migrations.latest}, newer"), lines.head.message)
        assert(lines.head.message.contains(s"($previous)"), lines.head.message)
        // the migration recorded every migration's answer, the earlier ones' from their files
        assertEquals(flags, Migrations.all.map(m => (m.version, Some(m.compatibleWithPrevious))))
    body.guarantee(TestDatabase.drop(schema)) *> noLeftovers
  }

  test(
    "a worker of the previous release, running across the newest migration, completes a workflow's tasks in a batch and the callback last; the triggers keep their workflow, parents and batch, and count them"
  ) {
    // the worker's claim and completion statements are the previous release's (this release left them as
    // they were), none naming a column of migration 14, and its completions keep no row (keepCompleted is
    // off): the rows in finished, and the batch's counts, are the triggers'
    val schema = TestDatabase.freshSchema()
    val dbConfig = TestDatabase.config(schema)
    val body =
      for
        _ <- migrateAs(pinned, dbConfig)
        runs <- Ref[IO].of(Vector.empty[Long])
        kept <- connectAs(pinned, dbConfig)(using org.typelevel.log4cats.noop.NoOpFactory[IO]).use { old =>
          DurableWorker.start[IO, Int, Unit](old, config.copy(keepCompleted = false))(source =>
            Pipeline(source).process(job => runs.update(_ :+ job.id))
          ).use { _ =>
            for
              _ <- migrateInChild(dbConfig)
              ids <-
                connectAs(Migrations.current, dbConfig)(using org.typelevel.log4cats.noop.NoOpFactory[IO])
                  .use { fresh =>
                    val q = TaskQueue[IO, Int](fresh, "upgrade")
                    val batches = Batches(fresh)
                    val graph = TaskGraph.empty.add("a", q, NewTask(1))
                      .add("b", q, NewTask(2), after = Vector(After.completed("a")))
                      .add("c", q, NewTask(3), after = Vector(After.completed("a"), After.completed("b")))
                    for
                      batch <- batches.open(q, NewTask(0))
                      members <- batches.addGraph(batch, graph)
                      _ <- batches.close(batch)
                    yield (batch, Vector("a", "b", "c").map(members(_).taskId))
                  }
              _ <- eventually("the workflow's tasks and the callback completed")(
                Rows.query[(Long, Long)](
                  s"SELECT (SELECT count(*) FROM ${schema("finished")} WHERE workflow IS NOT NULL), (SELECT count(*) FROM ${schema("tasks")})"
                ).map(_.head == (3L, 0L))
              )
              rows <- Rows.query[(Long, Option[Long], Option[String], Option[Long], String)](
                s"SELECT id, workflow, after::text, batch, state::text FROM ${schema("finished")} WHERE workflow IS NOT NULL ORDER BY id"
              )
              progress <-
                connectAs(Migrations.current, dbConfig)(using org.typelevel.log4cats.noop.NoOpFactory[IO])
                  .use(fresh => Batches(fresh).progress(ids._1))
            yield (ids, rows, progress)
          }
        }
        ran <- runs.get
      yield
        val ((batch, ids), rows, progress) = kept
        val (a, b, c) = (ids(0), ids(1), ids(2))
        assertEquals(progress.map(p => (p.members, p.completed, p.ended)), Some((3L, 3L, true)))
        assertEquals(ran, ids ++ progress.map(_.callback).toVector)
        assertEquals(
          rows,
          Vector(
            (a, Some(a), None, Some(batch.value), "completed"),
            (b, Some(a), Some(s"{$a}"), Some(batch.value), "completed"),
            (c, Some(a), Some(s"{$a,$b}"), Some(batch.value), "completed")
          )
        )
    body.guarantee(TestDatabase.drop(schema)) *> noLeftovers
  }

  /** A later release's migrations beyond this one's: an additive one, then one that renames a column. */
  private val additive =
    Migrations.Migration(
      Migrations.latest + 1,
      "task-notes",
      "ALTER TABLE weir_schema.tasks ADD COLUMN note text",
      compatibleWithPrevious = true
    )
  private val renaming =
    Migrations.Migration(
      Migrations.latest + 2,
      "payload-renamed",
      "ALTER TABLE weir_schema.tasks RENAME COLUMN payload TO body",
      compatibleWithPrevious = false
    )

  /** `connect`'s outcome for `release` on `config`'s schema, and the lines it logged. */
  private def connectOutcome(
      release: Migrations.Release,
      config: DatabaseConfig
  ): IO[(Either[Throwable, Unit], Vector[RecordedLogs.Line])] =
    RecordedLogs().flatMap { logs =>
      given LoggerFactory[IO] = logs
      connectAs(release, config).use_.attempt.product(logs.lines)
    }

  test(
    "a newer migration that is not compatible makes connect and migrate of earlier releases fail, naming both versions and the migration"
  ) {
    val schema = TestDatabase.freshSchema()
    val dbConfig = TestDatabase.config(schema)
    val later = Migrations.current.plus(additive)
    val latest = Migrations.latest
    val body =
      for
        _ <- migrateAs(later, dbConfig)
        // one compatible migration beyond: accepted by this release and the previous one, and migrate is a no-op
        currentOutcome <- connectOutcome(Migrations.current, dbConfig)
        oldOutcome <- connectOutcome(pinned, dbConfig)
        nothing <- Database.migrate[IO](dbConfig)
        _ <- migrateAs(later.plus(renaming), dbConfig)
        refusedOutcome <- connectOutcome(Migrations.current, dbConfig)
        oldRefused <- connectOutcome(pinned, dbConfig).map(_._1)
        migrateRefused <- Database.migrate[IO](dbConfig).attempt
        flags <- answers(schema)
      yield
        val (current, currentLogs) = currentOutcome
        val (old, oldLogs) = oldOutcome
        val (refused, refusedLogs) = refusedOutcome
        assertEquals(current, Right(()))
        assertEquals(currentLogs.map(l => (l.level, l.logger)), Vector(("WARN", "weir.postgres.schema")))
        assert(
          currentLogs.head.message.contains(s"version ${latest + 1}, newer than this weir knows ($latest)"),
          currentLogs.head.message
        )
        assertEquals(old, Right(()))
        assert(
          oldLogs.head.message.contains(s"beyond $previous ($latest, ${latest + 1})"),
          oldLogs.head.message
        )
        assertEquals(nothing, Vector.empty)
        val message =
          s"schema '${schema.name}' is at version ${latest +
              2}, newer than this weir knows ($latest), and migration ${latest + 2} (payload-renamed) is not compatible"
        refused match
          case Left(e: SchemaError) => assert(e.getMessage.startsWith(message), e.getMessage)
          case other => fail(s"expected a SchemaError, got $other")
        assertEquals(
          refusedLogs.map(l => (l.level, l.logger, l.error)),
          Vector(("ERROR", "weir.postgres.schema", refused.swap.toOption))
        )
        oldRefused match
          case Left(e: SchemaError) =>
            assert(
              e.getMessage.contains(s"version ${latest + 2}, newer than this weir knows ($previous)"),
              e.getMessage
            )
            assert(e.getMessage.contains(s"migration ${latest + 2} (payload-renamed) is not"), e.getMessage)
          case other => fail(s"expected a SchemaError, got $other")
        migrateRefused match
          case Left(e: SchemaError) => assert(e.getMessage.startsWith(message), e.getMessage)
          case other => fail(s"expected a SchemaError, got $other")
        assertEquals(flags.takeRight(2), Vector(latest + 1 -> Some(true), latest + 2 -> Some(false)))
    body.guarantee(TestDatabase.drop(schema)) *> noLeftovers
  }

  test("a schema at the previous version is refused by this release, naming both versions") {
    val schema = TestDatabase.freshSchema()
    val dbConfig = TestDatabase.config(schema)
    val body =
      for
        _ <- migrateAs(pinned, dbConfig)
        result <- connectOutcome(Migrations.current, dbConfig).map(_._1)
      yield result match
        case Left(e: SchemaError) =>
          assertEquals(
            e.getMessage,
            s"schema '${schema.name}' is at version $previous, this weir needs ${Migrations.latest}: run migrate"
          )
        case other => fail(s"expected a SchemaError, got $other")
    body.guarantee(TestDatabase.drop(schema)) *> noLeftovers
  }

  test(
    "undoing migration 10 as docs/durable.md says leaves the schema at version 9; migrate applies it again"
  ) {
    val schema = TestDatabase.freshSchema()
    val dbConfig = TestDatabase.config(schema)
    val nine = Migrations.current.pinnedAt(Migrations.recordedSince - 1)
    val ten = Migrations.current.pinnedAt(Migrations.recordedSince)
    val body =
      for
        _ <- migrateAs(ten, dbConfig)
        // "Rolling back", from version 10 back to 9: the same statements, in one transaction
        _ <-
        (Fragment.const(
          s"ALTER TABLE ${schema("migrations")} DROP COLUMN compatible_with_previous"
        ).update.run *>
          Fragment.const(s"DELETE FROM ${schema("migrations")} WHERE version = 10").update.run)
          .transact(TestDatabase.admin)
        versions <- Rows.query[Int](s"SELECT version FROM ${schema("migrations")} ORDER BY version")
        nineOutcome <- connectOutcome(nine, dbConfig)
        again <- migrateAs(ten, dbConfig)
        flags <- answers(schema)
      yield
        val (nineConnects, nineLogs) = nineOutcome
        assertEquals(versions, (1 to 9).toVector)
        assertEquals(nineConnects, Right(()))
        assertEquals(nineLogs, Vector.empty)
        assertEquals(again, Vector(10))
        assertEquals(flags, ten.known.map(m => (m.version, Some(m.compatibleWithPrevious))))
    body.guarantee(TestDatabase.drop(schema)) *> noLeftovers
  }
