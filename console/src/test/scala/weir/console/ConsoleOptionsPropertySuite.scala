package weir.console

import cats.effect.IO
import cats.effect.unsafe.implicits.global
import com.comcast.ip4s.{Host, Port}
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.InvalidSettings
import weir.postgres.Database

import scala.concurrent.duration.*

/**
 * Random invalid [[ConsoleOptions]], several bad fields at once: building and copying them throws nothing,
 * and [[WeirConsole.routes]] and [[WeirConsole.server]] fail in `F`, before any query (they are given no
 * database at all), with one [[InvalidSettings]] naming every bad field with its value.
 */
class ConsoleOptionsPropertySuite extends ScalaCheckSuite:

  /** One bad field: how it changes the options, and the error that must name it. */
  final case class Bad(set: ConsoleOptions => ConsoleOptions, error: String):
    override def toString: String = error

  private def outside(lo: Int, hi: Int) =
    Gen.oneOf(Gen.chooseNum(Int.MinValue, lo - 1), Gen.chooseNum(hi + 1, Int.MaxValue))

  private val bads: Vector[Gen[Bad]] = Vector(
    outside(1, 1000).map(n => Bad(_.copy(pageSize = n), s"pageSize must be in 1..1000, was: $n")),
    outside(100, 1000000).map(n => Bad(_.copy(scanLimit = n), s"scanLimit must be in 100..1000000, was: $n")),
    outside(10, 1000000).map(n => Bad(_.copy(countCap = n), s"countCap must be in 10..1000000, was: $n")),
    Gen.oneOf(Gen.chooseNum(-100000L, -1L), Gen.chooseNum(3600001L, 100000000L)).map(ms =>
      Bad(_.copy(countsEvery = ms.millis), s"countsEvery must be in 0 s..1 hour, was: ${ms.millis}")
    ),
    Gen.oneOf(Gen.chooseNum(-100000L, 59999L), Gen.chooseNum(30L * 86400000 + 1, 100L * 86400000)).map(ms =>
      Bad(
        _.copy(sessionLifetime = ms.millis),
        s"sessionLifetime must be in 1 minute..30 days, was: ${ms.millis}"
      )
    ),
    Gen.choose(0, 7).map(n =>
      Bad(_.copy(adminToken = Some("s" * n)), s"an admin token must have at least 8 characters, was: $n")
    )
  )

  private val scenarios: Gen[List[Bad]] =
    for
      n <- Gen.choose(1, bads.size)
      chosen <- Gen.pick(n, bads.indices)
      bad <- Gen.sequence[List[Bad], Bad](chosen.toList.sorted.map(bads))
    yield bad

  property("bad options build and copy; routes and server fail naming every bad field and its value") {
    Prop.forAll(scenarios) { bad =>
      val options = bad.foldLeft(ConsoleOptions())((o, b) => b.set(o))
      val db = null.asInstanceOf[Database[IO]]
      val routes = IO.defer(WeirConsole.routes(db, options).use_).attempt.unsafeRunSync()
      val server =
        IO.defer(WeirConsole.server(db, options, Host.fromString("127.0.0.1").get, Port.fromInt(0).get).use_)
          .attempt.unsafeRunSync()
      List(routes, server).foreach {
        case Left(e: InvalidSettings) =>
          assert(e.getMessage.startsWith("invalid ConsoleOptions: "), e.getMessage)
          bad.foreach(b =>
            assert(e.getMessage.contains(b.error), s"'${e.getMessage}' does not name '${b.error}'")
          )
          assertEquals(e.errors.size, bad.size, e.getMessage)
          // the token's length is named, never the token
          options.adminToken.filter(_.nonEmpty).foreach(t =>
            assert(!e.getMessage.contains(s"'$t'"), e.getMessage)
          )
        case other => fail(s"expected InvalidSettings naming $bad, got $other")
      }
    }
  }

  test("the default options and a long enough token have no errors") {
    assertEquals(ConsoleOptions().errors, Nil)
    assertEquals(ConsoleOptions(adminToken = Some("12345678")).errors, Nil)
  }
