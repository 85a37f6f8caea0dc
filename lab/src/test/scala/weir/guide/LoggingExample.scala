package weir.guide

// docs/guide.md, "Logging": DocSnippetsSuite checks that the guide's block is this code, verbatim.

import cats.effect.{IO, Resource}
import org.typelevel.log4cats.LoggerFactory
import weir.*
import weir.postgres.*

object LoggingExample:
  // the application's factory, given once (log4cats-slf4j: `given LoggerFactory[IO] = Slf4jFactory.create[IO]`);
  // every weir call below that logs takes it from there
  def emails(url: String)(using LoggerFactory[IO]): Resource[IO, DurableWorker[IO, Email]] =
    Database.connect[IO](DatabaseConfig(url)).flatMap { db =>
      DurableWorker.start[IO, Email, Unit](db, WorkerConfig(queue = "emails")) { source =>
        Pipeline(source).process(job => DurableQuickStart.send(job.payload))
      }
    }
