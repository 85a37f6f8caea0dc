package weir.guide.durable

// docs/durable.md, "Your own pool": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.{IO, Resource}
import doobie.Transactor
import weir.postgres.*

import javax.sql.DataSource
import scala.concurrent.duration.*

object OwnPool:
  // checked as connect checks: reachable, the schema at this version; your pool is never closed by weir
  def onDataSource(dataSource: DataSource): Resource[IO, Database[IO]] =
    Database.fromDataSource[IO](dataSource, schema = Schema("jobs"), readTimeout = 30.seconds)

  def onTransactor(transactor: Transactor[IO]): Resource[IO, Database[IO]] =
    Database.fromTransactor[IO](transactor, schema = Schema("jobs"), readTimeout = 30.seconds)
