package weir.postgres

import cats.effect.IO
import cats.effect.unsafe.implicits.global
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.{InvalidSettings, Pipeline, Retry}

import scala.concurrent.duration.*

/**
 * Random invalid settings of weir-postgres, several bad fields at once: building and copying them throws
 * nothing, and what uses them (`DurableWorker.start`, `Database.connect`) fails in `F` with one
 * [[InvalidSettings]] naming every bad field with its value, before any connection is made (the worker is
 * given no database at all).
 */
class InvalidSettingsPropertySuite extends ScalaCheckSuite:

  /** One bad field: how it changes a config, and the error that must name it. */
  final case class Bad[C](set: C => C, error: String):
    override def toString: String = error

  private val nonPositive = Gen.chooseNum(-1000000, 0)
  private def millis(lo: Long, hi: Long) = Gen.chooseNum(lo, hi).map(_.millis)

  private val workerBads: Vector[Gen[Bad[WorkerConfig]]] = Vector(
    Gen.const(Bad[WorkerConfig](_.copy(queue = ""), "queue name must not be empty, was: ''")),
    nonPositive.map(n => Bad(_.copy(claimBatch = n), s"claimBatch must be > 0, was: $n")),
    millis(-5000, 0).map(d => Bad(_.copy(pollInterval = d), s"pollInterval must be > 0, was: $d")),
    millis(-5000, 1000).map(d =>
      Bad(_.copy(deadAfter = d), s"deadAfter must be longer than the heartbeat (1 second), was: $d")
    ),
    millis(-5000, 2000).map(d =>
      Bad(_.copy(lease = d), s"lease must be longer than two heartbeats (2 seconds), was: $d")
    ),
    nonPositive.map(n =>
      Bad(
        _.copy(backoff = Retry.exponential(1.second, maxAttempts = n)),
        s"backoff: maxAttempts must be >= 1, was: $n"
      )
    ),
    millis(-5000, -1).map(d =>
      Bad(
        _.copy(retention = Some(Retention(dead = d))),
        s"retention: dead retention must be >= 0, was: $d"
      )
    ),
    nonPositive.map(n => Bad(_.copy(ackBatch = n), s"ackBatch must be > 0, was: $n")),
    millis(-5000, -1).map(d => Bad(_.copy(releaseGrace = d), s"releaseGrace must be >= 0, was: $d")),
    Gen.oneOf(nonPositive, Gen.chooseNum(0x10000000, Int.MaxValue)).map(n =>
      Bad(
        _.copy(maxResultBytes = n),
        s"maxResultBytes must be between 1 and 268435455 (what a jsonb value holds), was: $n"
      )
    )
  )

  private val databaseBads: Vector[Gen[Bad[DatabaseConfig]]] = Vector(
    Gen.oneOf("mysql://u:pw@h/db", "nothing", "postgresql://u:pw@/db").map(u =>
      Bad(_.copy(url = u), DatabaseConfig(u).redactedUrl)
    ),
    Gen.oneOf("Weir", "1abc", "a-b", "x" * 64, "").map(n =>
      Bad(_.copy(schema = Schema(n)), s"was: '$n'")
    ),
    nonPositive.map(n => Bad(_.copy(poolSize = n), s"poolSize must be > 0, was: $n")),
    nonPositive.map(n => Bad(_.copy(workerPoolSize = n), s"workerPoolSize must be > 0, was: $n")),
    millis(-5000, 0).map(d => Bad(_.copy(connectTimeout = d), s"connectTimeout must be > 0, was: $d")),
    millis(-5000, 0).map(d => Bad(_.copy(readTimeout = d), s"readTimeout must be > 0, was: $d"))
  )

  private def several[C](bads: Vector[Gen[Bad[C]]]): Gen[List[Bad[C]]] =
    for
      n <- Gen.choose(1, bads.size)
      chosen <- Gen.pick(n, bads.indices)
      bad <- Gen.sequence[List[Bad[C]], Bad[C]](chosen.toList.sorted.map(bads))
    yield bad

  private def namesEvery[C](outcome: Either[Throwable, Unit], settings: String, bad: List[Bad[C]]) =
    outcome match
      case Left(e: InvalidSettings) =>
        assert(e.getMessage.startsWith(s"invalid $settings: "), e.getMessage)
        bad.foreach(b =>
          assert(e.getMessage.contains(b.error), s"'${e.getMessage}' does not name '${b.error}'")
        )
        assertEquals(e.errors.size, bad.size, e.getMessage)
        assert(!e.getMessage.contains(":pw@"), e.getMessage)
      case other => fail(s"expected InvalidSettings naming $bad, got $other")

  property("a WorkerConfig with bad fields builds and copies; DurableWorker.start fails naming every one") {
    Prop.forAll(several(workerBads)) { bad =>
      val config = bad.foldLeft(WorkerConfig(queue = "q"))((c, b) => b.set(c))
      assertEquals(config.errors.size, bad.size, config.errors.toString)
      // no database: the config is checked before the worker touches it
      val db = null.asInstanceOf[Database[IO]]
      val started =
        IO.defer(DurableWorker.start[IO, Int, Unit](db, config)(Pipeline(_).process(_ => IO.unit)).use_)
      namesEvery(started.attempt.unsafeRunSync(), "WorkerConfig", bad)
    }
  }

  property("a DatabaseConfig with bad fields builds and copies; connect and migrate fail naming every one") {
    Prop.forAll(several(databaseBads)) { bad =>
      val config = bad.foldLeft(DatabaseConfig("postgresql://u:pw@localhost:1/db"))((c, b) => b.set(c))
      namesEvery(Database.connect[IO](config).use_.attempt.unsafeRunSync(), "DatabaseConfig", bad)
      namesEvery(Database.migrate[IO](config).void.attempt.unsafeRunSync(), "DatabaseConfig", bad)
    }
  }

  property("a Database on a user's pool with bad settings fails naming every one, before touching the pool") {
    Prop.forAll(Gen.option(Gen.oneOf("Weir", "1abc", "a-b", "x" * 64, "")), Gen.option(millis(-5000, 0))) {
      (name, timeout) =>
        val schema = name.fold(Schema.default)(Schema(_))
        val readTimeout = timeout.getOrElse(30.seconds)
        val others = name.map(n => s"was: '$n'").toList ++
          timeout.map(d => s"readTimeout must be > 0, was: $d")
        // the source is null: it is one of the bad values, and nothing can have touched it
        namesEvery(
          Database.fromDataSource[IO](null, schema, readTimeout).use_.attempt.unsafeRunSync(),
          "Database.fromDataSource",
          (Bad[Unit](identity, "dataSource must be set, was: null") :: others.map(Bad[Unit](identity, _)))
        )
        namesEvery(
          Database.fromTransactor[IO](null, schema, readTimeout).use_.attempt.unsafeRunSync(),
          "Database.fromTransactor",
          (Bad[Unit](identity, "transactor must be set, was: null") :: others.map(Bad[Unit](identity, _)))
        )
    }
  }

  property("valid configs have no errors") {
    Prop.forAll(Gen.choose(1, 1000), Gen.choose(1, 100)) { (claimBatch, poolSize) =>
      assertEquals(WorkerConfig(queue = "q", claimBatch = claimBatch).errors, Nil)
      assertEquals(DatabaseConfig("postgresql://u:pw@localhost/db", poolSize = poolSize).errors, Nil)
    }
  }
