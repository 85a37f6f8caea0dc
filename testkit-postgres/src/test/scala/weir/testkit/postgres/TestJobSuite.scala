package weir.testkit.postgres

import cats.effect.testkit.TestControl
import cats.effect.{Deferred, IO}
import doobie.implicits.*
import fs2.Stream
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}
import weir.{Disposition, InvalidSettings, Pipeline, Source, TaskInterrupted, TaskOutcome}

import java.time.Instant
import scala.concurrent.duration.*

/** A built job carries what it was built with, and its database hooks answer as documented. */
class TestJobSuite extends CatsEffectSuite with ScalaCheckSuite:

  override def munitIOTimeout: Duration = 90.seconds

  test(
    "defaults: the first attempt of 20, id 1 on queue test, priority 0, no key nor headers, created at build time"
  ) {
    TestControl.executeEmbed(IO.sleep(5.seconds) *> TestJob("hello").build[IO]).map { built =>
      val j = built.job
      assertEquals(
        (
          j.payload,
          j.id,
          j.queue,
          j.attempt,
          j.maxAttempts,
          j.priority,
          j.orderingKey,
          j.headers,
          j.createdAt
        ),
        ("hello", 1L, "test", 1, 20, 0, None, Map.empty[String, String], Instant.ofEpochSecond(5))
      )
      assertEquals(j.tryStart(), None)
    }
  }

  private val validJobs: Gen[TestJob[Int]] =
    for
      payload <- Gen.posNum[Int]
      id <- Gen.choose(1L, Long.MaxValue)
      queue <- Gen.stringOfN(12, Gen.alphaChar).map("q" + _)
      maxAttempts <- Gen.choose(1, 100)
      attempt <- Gen.choose(1, maxAttempts)
      priority <- Gen.choose(Short.MinValue.toInt, Short.MaxValue.toInt)
      key <- Gen.option(Gen.stringOfN(12, Gen.alphaNumChar).map("k" + _))
      created <- Gen.choose(0L, 4102444800L).map(Instant.ofEpochSecond)
      n <- Gen.choose(0, 5)
      headers <- Gen.mapOfN(n, Gen.zip(Gen.stringOfN(8, Gen.alphaChar), Gen.stringOfN(20, Gen.alphaNumChar)))
    yield TestJob(payload, id, queue, attempt, maxAttempts, priority, key, Some(created), headers)

  property("every field set is what the handler reads") {
    Prop.forAll(validJobs) { spec =>
      val j = spec.build[IO].unsafeRunSync().job
      assertEquals(spec.errors, Nil)
      assertEquals(
        (
          j.payload,
          j.id,
          j.queue,
          j.attempt,
          j.maxAttempts,
          j.priority,
          j.orderingKey,
          Some(j.createdAt),
          j.headers
        ),
        (
          spec.payload,
          spec.id,
          spec.queue,
          spec.attempt,
          spec.maxAttempts,
          spec.priority,
          spec.orderingKey,
          spec.createdAt,
          spec.headers
        )
      )
    }
  }

  property("what no worker's job could have fails the build, every bad value named") {
    val bad = Gen.oneOf(
      Gen.choose(Long.MinValue, 0L).map(id => TestJob(0, id = id) -> s"id must be > 0, was: $id"),
      Gen.const(TestJob(0, queue = "") -> "queue name must not be empty, was: ''"),
      Gen.choose(Int.MinValue, 0).map(a => TestJob(0, attempt = a) -> s"attempt must be >= 1, was: $a"),
      Gen.choose(2, 50).map(a =>
        TestJob(0, attempt = a, maxAttempts = a - 1) -> s"attempt must be <= maxAttempts (${a - 1}), was: $a"
      ),
      Gen.const(TestJob(0, priority = 40000) -> "priority must fit in a smallint, was: 40000"),
      Gen.const(TestJob(0, orderingKey = Some("")) -> "orderingKey must not be empty, was: \"\""),
      Gen.const(TestJob(0, headers = Map("" -> "v")) -> "header keys must not be empty, was: '' (value 'v')")
    )
    Prop.forAll(Gen.nonEmptyListOf(bad)) { cases =>
      cases.foreach { (spec, error) =>
        val result = spec.build[IO].attempt.unsafeRunSync()
        result match
          case Left(e: InvalidSettings) =>
            assertEquals(e.settings, "TestJob")
            assert(e.errors.contains(error), s"${e.errors} lacks: $error")
          case other => fail(s"expected InvalidSettings for $spec, was: $other")
      }
    }
  }

  test("several bad values are named in one error") {
    TestJob(0, id = 0, attempt = 0).build[IO].attempt.map { r =>
      assertEquals(
        r.left.map(_.getMessage),
        Left("invalid TestJob: id must be > 0, was: 0; attempt must be >= 1, was: 0")
      )
    }
  }

  test("completeIn, run in a real transaction, completes the task once: true, then false; the count says 1") {
    TestDatabase.resource[IO]().use { db =>
      for
        built <- TestJob("invoice").build[IO]
        first <- built.job.completeIn.transact(db.transactor)
        second <- built.job.completeIn.transact(db.transactor)
        n <- built.completions
      yield assertEquals((first, second, n), (true, false, 1))
    }
  }

  test("a lost claim refuses the job and completes nothing: completeIn answers false") {
    for
      built <- TestJob("invoice").build[IO]
      _ <- built.loseClaim
      done <- TestDatabase.resource[IO]().use(db => built.job.completeIn.transact(db.transactor))
      n <- built.completions
    yield
      assertEquals((done, n), (false, 0))
      assertEquals(built.job.tryStart(), Some("another worker rescued this claim (TestJob.Built.loseClaim)"))
  }

  test("a cancel interrupts the attempt an engine is running, which ends interrupted with the reason") {
    TestControl.executeEmbed(
      for
        built <- TestJob("report").build[IO]
        started <- Deferred[IO, Unit]
        run <- Pipeline(Source.refusable(Stream.emit(built.job).covary[IO]))
          .process(_ => started.complete(()) *> IO.never[Unit])
          .run
          .start
        _ <- started.get *> IO.sleep(1.second)
        first <- built.cancel("the operator stopped it")
        again <- built.cancel("twice")
        summary <- run.joinWithNever
      yield
        assertEquals((first, again), (true, false))
        summary.failures.toList match
          case List(f) =>
            assertEquals(f.disposition, Disposition.Interrupted)
            f.error match
              case e: TaskInterrupted => assertEquals(e.reason, "cancelled: the operator stopped it")
              case other => fail(s"expected TaskInterrupted, was: $other")
          case other => fail(s"expected one failure, was: $other")
        assertEquals(built.job.tryStart(), Some("cancelled: the operator stopped it"))
    )
  }

  test("a job cancelled before it starts is refused by the engine and never runs") {
    for
      built <- TestJob("report").build[IO]
      _ <- built.cancel("too late")
      ran <- IO.ref(false)
      outcomes <- Pipeline(Source.refusable(Stream.emit(built.job).covary[IO]))
        .process(_ => ran.set(true))
        .outcomes
        .compile
        .toList
      r <- ran.get
    yield
      assert(!r)
      outcomes match
        case List(TaskOutcome.NotStarted(job, _)) => assertEquals(job, built.job)
        case other => fail(s"expected the job not started, was: $other")
  }
