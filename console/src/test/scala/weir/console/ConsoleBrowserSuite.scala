package weir.console

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import com.comcast.ip4s.*
import fs2.io.net.Network
import munit.CatsEffectSuite
import org.http4s.{HttpRoutes, MediaType}
import org.http4s.dsl.io.*
import org.http4s.ember.server.EmberServerBuilder
import org.http4s.headers.`Content-Type`
import org.http4s.server.Router
import org.openqa.selenium.{
  By, OutputType, StaleElementReferenceException, TakesScreenshot, WebDriver, WebElement
}
import org.openqa.selenium.chrome.{ChromeDriver, ChromeDriverService, ChromeOptions}
import org.openqa.selenium.logging.LogType
import io.circe.Json
import weir.Pipeline
import weir.console.internal.SecurityHeaders
import weir.postgres.{After, Database, DurableWorker, NewTask, TaskAdmin, TaskGraph, TaskQueue, WorkerConfig}

import java.io.File
import java.nio.file.{Files, Path, Paths}
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * An operator's journeys in headless Chromium (Debian's `chromium`, driven through Debian's
 * `chromium-driver` by Selenium) against a real console server, mounted under a prefix, over a real
 * PostgreSQL: the overview and its live chart, filtering tasks, a dead task's errors, refusal without the
 * token, a retry and a pause, each checked in the page and in the database, the retry found in the audit
 * log; then a real worker, which
 * claims nothing while the queue is paused and runs the retried task once the console resumes the queue.
 *
 * Every page runs under the console's Content-Security-Policy, which refuses inline scripts and styles:
 * after each journey the browser's log must hold no report of a refusal (the first journey checks that
 * such a report is seen, on a probe page with inline code served under the same headers).
 *
 * Without the browser or its driver the suite is skipped, unless `CI=true`: CI installs both (`.ci/run`),
 * so there a missing one is a failure. The tests run in order on one server and one browser.
 *
 * With `WEIR_CONSOLE_SCREENSHOTS=<directory>` the last test also saves a screenshot of every page there
 * (docs/console.md names the command that regenerates `docs/img/`).
 */
class ConsoleBrowserSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 120.seconds

  private val token = "browser-admin-token"
  private val patience = 20.seconds

  private def executable(names: String*): Option[Path] =
    sys.env.getOrElse("PATH", "").split(File.pathSeparator).iterator.filter(_.nonEmpty)
      .flatMap(dir => names.map(Paths.get(dir, _))).find(Files.isExecutable(_))

  private lazy val tools: Option[(Path, Path)] =
    for
      browser <- executable("chromium", "chromium-browser")
      driver <- executable("chromedriver")
    yield (browser, driver)

  private def requireTools(): (Path, Path) =
    if tools.isEmpty && sys.env.get("CI").contains("true") then
      fail(
        "CI=true but no chromium or chromedriver on PATH: .ci/run installs Debian's chromium and chromium-driver"
      )
    assume(
      tools.isDefined,
      "no chromium or chromedriver on PATH (Debian packages `chromium`, `chromium-driver`): skipped"
    )
    tools.get

  /** The console at `base`, its database and planted rows, and a browser. */
  final case class Setup(base: String, db: Database[IO], fixture: Planted, browser: WebDriver)

  private def browser(chromium: Path, chromedriver: Path): Resource[IO, WebDriver] =
    Resource.make(IO.blocking {
      val service = new ChromeDriverService.Builder().usingDriverExecutable(
        chromedriver.toFile
      ).usingAnyFreePort().build()
      val options = new ChromeOptions()
        .setBinary(chromium.toFile)
        // root in a container: Chromium's sandbox cannot start there
        .addArguments(
          "--headless=new",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-dev-shm-usage",
          "--window-size=1400,1000"
        )
      // the browser's console log, where Chromium reports what the Content-Security-Policy refused
      options.setCapability("goog:loggingPrefs", java.util.Map.of(LogType.BROWSER, "ALL"))
      new ChromeDriver(service, options): WebDriver
    })(d => IO.blocking(d.quit()))

  private val setup = ResourceSuiteLocalFixture(
    "console and browser",
    Resource.eval(IO(tools)).flatMap {
      case None => Resource.pure[IO, Option[Setup]](None)
      case Some((chromium, chromedriver)) =>
        for
          (db, fixture) <- ConsoleDatabase.planted
          routes <- WeirConsole.routes(db, ConsoleOptions(adminToken = Some(token)))
          server <- EmberServerBuilder.default[IO].withHost(host"127.0.0.1").withPort(port"0")
            .withHttpApp(Router("/ops/weir" -> routes, "/csp-probe" -> SecurityHeaders(probe)).orNotFound)
            .build
          driver <- browser(chromium, chromedriver)
        yield Some(Setup(s"http://127.0.0.1:${server.address.getPort}/ops/weir/", db, fixture, driver))
    }
  )

  override def munitFixtures = List(setup)

  /** A page with an inline script, an inline style sheet and a style attribute: what the policy refuses. */
  private val probe: HttpRoutes[IO] = HttpRoutes.of[IO] { case GET -> Root =>
    Ok(
      """<!doctype html><html><head><style>p { color: red }</style></head><body>
<p style="color: blue">probe</p><script>document.title = "ran"</script></body></html>""",
      `Content-Type`(MediaType.text.html)
    )
  }

  /** What the browser logged since the last call that reports a refusal by the Content-Security-Policy. */
  private def refusals(s: Setup): IO[List[String]] =
    IO.blocking(s.browser.manage().logs().get(LogType.BROWSER).getAll.asScala.toList.map(_.getMessage))
      .map(_.filter(_.contains("Content Security Policy")))

  private given Network[IO] = Network.forIO

  // lets the fixture bind a pair with a tuple pattern in a for comprehension
  extension [A](r: Resource[IO, A])
    private def withFilter(p: A => Boolean): Resource[IO, A] =
      r.evalMap(a => if p(a) then IO.pure(a) else IO.raiseError(new MatchError(a)))

  private def journey(name: String)(body: Setup => IO[Unit])(using munit.Location): Unit =
    test(name) {
      requireTools(): Unit
      IO(setup().getOrElse(fail("the console did not start"))).flatMap { s =>
        body(s) *> refusals(s).map(refused => assertEquals(refused, Nil, "refused by the CSP"))
      }
    }

  /** Polls the page until `found` gives a value, for at most `patience`. */
  private def await[A](s: Setup, what: String)(found: WebDriver => Option[A]): IO[A] =
    val deadline = System.nanoTime() + patience.toNanos
    // the overview swaps its table in place every few seconds: an element read across a swap is retried
    def loop: IO[A] = IO.blocking(found(s.browser)).recover { case _: StaleElementReferenceException =>
      None
    }.flatMap {
      case Some(a) => IO.pure(a)
      case None if System.nanoTime() > deadline =>
        IO(fail(
          s"waited $patience for $what; the page is ${s.browser.getCurrentUrl}:\n${s.browser.getPageSource.take(3000)}"
        ))
      case None => IO.sleep(50.millis) *> loop
    }
    loop

  private def all(d: WebDriver, css: String): List[WebElement] =
    d.findElements(By.cssSelector(css)).asScala.toList

  private def heading(s: Setup, text: String): IO[Unit] =
    await(s, s"the page '$text'")(d => all(d, "h1").find(_.getText == text)).void

  private def open(s: Setup, path: String): IO[Unit] = IO.blocking(s.browser.get(s.base + path))

  private def click(s: Setup, css: String): IO[Unit] =
    await(s, css)(d => all(d, css).headOption).flatMap(e => IO.blocking(e.click()))

  journey("a page with inline code under the console's headers: the browser refuses it and logs why") { s =>
    // the log is read as it fills: each read hands over what was logged since the last one
    def seen(so: List[String]): IO[List[String]] =
      refusals(s).map(so ++ _).flatMap { all =>
        val both = all.count(_.contains("inline script")) >= 1 && all.count(_.contains("inline style")) >= 2
        if both then IO.pure(all) else IO.sleep(50.millis) *> seen(all)
      }
    for
      _ <- IO.blocking(s.browser.get(s.base.replace("/ops/weir/", "/csp-probe")))
      _ <- await(s, "the probe")(d => all(d, "p").headOption)
      refused <- seen(Nil).timeout(patience)
      title <- IO.blocking(s.browser.getTitle)
    yield
      assertNotEquals(title, "ran", "the inline script ran")
      // the style sheet and the style attribute, and the script
      assertEquals(refused.count(_.contains("inline style")), 2, refused)
      assertEquals(refused.count(_.contains("inline script")), 1, refused)
  }

  journey("the overview lists every queue and draws the last hour's throughput") { s =>
    for
      _ <- open(s, "")
      _ <- heading(s, "Overview")
      rows <- await(s, "the queues")(d =>
        Option(all(d, "tr[data-queue]").map(_.getAttribute("data-queue"))).filter(_.nonEmpty)
      )
      // the chart's script fetched the series and uPlot drew it
      _ <- await(s, "the chart")(d => all(d, ".throughput[data-points='60'] canvas").headOption)
      // the queues' table is refreshed in place
      _ <- await(s, "a refresh of the queues")(d =>
        all(d, "[data-refreshed] tr[data-queue='emails']").headOption
      )
    yield assertEquals(rows, List("emails", "reports"))
  }

  journey("filtering the tasks by state finds the dead task") { s =>
    for
      _ <- click(s, "nav a[href='./tasks']")
      _ <- heading(s, "Tasks")
      _ <- IO.blocking {
        s.browser.findElement(By.cssSelector("select[name='state'] option[value='dead']")).click()
        s.browser.findElement(By.cssSelector("form.filters button")).click()
      }
      ids <- await(s, "the dead task alone")(d =>
        Option(all(d, "tr[data-task]").map(_.getAttribute("data-task").toLong)).filter(_.size == 1)
      )
    yield assertEquals(ids, List(s.fixture.dead))
  }

  journey("without the admin token, a retry is refused and the task stays dead") { s =>
    for
      _ <- open(s, s"tasks/${s.fixture.dead}")
      _ <- heading(s, s"Task ${s.fixture.dead}")
      _ <- click(s, "form[action$='/retry'] button")
      _ <- heading(s, "Forbidden")
      text <- IO.blocking(s.browser.findElement(By.cssSelector("main")).getText)
      state <- Planted.where(s.db, s.fixture.dead)
    yield
      assert(text.contains("Log in with the admin token"), text)
      assertEquals(state, Some("dead"))
  }

  journey("an operator logs in, opens the dead task, sees its errors and retries it") { s =>
    for
      _ <- open(s, "login")
      _ <- IO.blocking {
        s.browser.findElement(By.name("operator")).sendKeys("ada")
        s.browser.findElement(By.name("token")).sendKeys(token)
        s.browser.findElement(By.cssSelector("main form button")).click()
      }
      _ <- heading(s, "Overview")
      _ <- open(s, "tasks?state=dead")
      _ <- click(s, s"tr[data-task='${s.fixture.dead}'] a")
      _ <- heading(s, s"Task ${s.fixture.dead}")
      errors <- IO.blocking(all(s.browser, "ol.errors li summary").map(_.getText))
      _ <- click(s, "form[action$='/retry'] button")
      shown <- await(s, "the retried task")(d =>
        all(d, "dl.task .state").headOption.map(_.getText).filter(_ == "available")
      )
      state <- Planted.where(s.db, s.fixture.dead)
    yield
      assertEquals(errors.size, 2, errors)
      assert(errors.last.contains("smtp.example.org refused the connection"), errors)
      assertEquals(shown, "available")
      assertEquals(state, Some("available"))
  }

  journey("the retry is in the audit log as the operator's, and on the task's page") { s =>
    val dead = s.fixture.dead
    for
      _ <- open(s, "audit")
      _ <- heading(s, "Audit")
      row <- await(s, "the retry's entry")(d =>
        all(
          d,
          "table.audit tr[data-entry]"
        ).find(_.findElements(By.cssSelector(s"a[href='./tasks/$dead']")).size == 1)
          .map(r =>
            List("operator", "action", "outcome").map(c => r.findElement(By.cssSelector(s"td.$c")).getText)
          )
      )
      _ <- IO.blocking {
        s.browser.findElement(By.name("operator")).sendKeys("nobody")
        s.browser.findElement(By.cssSelector("form.filters button")).click()
      }
      none <- await(s, "the empty filter")(d => all(d, "p.empty").headOption.map(_.getText))
      _ <- open(s, s"tasks/$dead")
      own <- await(s, "the task's own entries")(d =>
        Option(all(d, ".task-audit td.action").map(_.getText)).filter(_.nonEmpty)
      )
    yield
      assertEquals(row, List("ada", "retry", "done"))
      assertEquals(none, "No action is recorded here.")
      assertEquals(own, List("retry"))
  }

  journey("pausing a queue shows it paused, in the page and for the workers") { s =>
    for
      _ <- open(s, "queues/emails")
      _ <- heading(s, "Queue emails")
      _ <- click(s, "form[action$='/pause'] button")
      badge <- await(s, "the paused badge")(d =>
        all(d, "tr[data-queue='emails'] .paused").headOption.map(_.getText).filter(_ == "paused")
      )
      resume <-
        await(s, "the resume button")(d => all(d, "form[action$='/resume'] button").headOption.map(_.getText))
      paused <- TaskAdmin(s.db).overview.queues.map(_.find(_.name == "emails").exists(_.paused))
    yield
      assertEquals(badge, "paused")
      assertEquals(resume, "Resume")
      assert(paused)
  }

  journey(
    "a worker claims nothing from the paused queue; resumed from the console, it runs the retried task"
  ) { s =>
    val config = WorkerConfig(queue = "emails", pollInterval = 200.millis, keepCompleted = true)
    DurableWorker.start[IO, Json, Unit](s.db, config)(Pipeline(_).process(_ => IO.unit)).use { worker =>
      val deadline = System.nanoTime() + patience.toNanos
      def heldBack: IO[weir.postgres.WorkerStats] = worker.stats.flatMap { st =>
        if st.heldBack > 0 then IO.pure(st)
        else if System.nanoTime() > deadline then IO(fail(s"the worker never tried to claim: $st"))
        else IO.sleep(50.millis) *> heldBack
      }
      def runs: IO[String] =
        open(s, s"tasks/${s.fixture.dead}") *>
          IO.blocking(all(s.browser, "dl.task .state").headOption.map(_.getText))
            .flatMap {
              case Some("completed") => IO.pure("completed")
              case other if System.nanoTime() > deadline =>
                IO(fail(s"the retried task is still $other:\n${s.browser.getPageSource.take(3000)}"))
              case _ => IO.sleep(100.millis) *> runs
            }
      for
        held <- heldBack
        waiting <- Planted.where(s.db, s.fixture.dead)
        _ <- open(s, "workers")
        shown <- await(s, "the worker's row")(d =>
          all(d, s"tr[data-worker='${worker.id}']").headOption.map(_.getText)
        )
        _ <- open(s, "queues/emails")
        _ <- click(s, "form[action$='/resume'] button")
        _ <- await(s, "the queue resumed")(d =>
          all(d, "tr[data-queue='emails'] .paused").headOption.map(_.getText).filter(_ == "active")
        )
        state <- runs
        done <- Planted.where(s.db, s.fixture.dead)
      yield
        assertEquals(held.claimed, 0L, "paused: held back, nothing claimed")
        assertEquals(waiting, Some("available"))
        assert(shown.contains(config.name), shown)
        assertEquals(state, "completed")
        assertEquals(done, Some("completed"))
    }
  }

  journey(
    "a workflow's page shows its progress and its tasks by layer; a task's link opens its page, whose workflow link leads back"
  ) { s =>
    val q = TaskQueue[IO, Int](s.db, "flows")
    for
      ids <- TaskGraph.empty.add("a", q, NewTask(1))
        .add("b", q, NewTask(2), after = Vector(After.completed("a")))
        .add("c", q, NewTask(3), after = Vector(After.completed("a")))
        .enqueue(s.db).map(_.view.mapValues(_.taskId).toMap)
      w = ids("a")
      _ <- open(s, s"workflows/$w")
      _ <- heading(s, s"Workflow $w")
      layers <- await(s, "the layers")(d =>
        Option(all(d, "tbody.layer").map(l =>
          l.getAttribute("data-layer") ->
            all(d, s"tbody.layer[data-layer='${l.getAttribute("data-layer")}'] tr[data-task]")
              .map(_.getAttribute("data-task").toLong)
        )).filter(_.size == 2)
      )
      max <- IO.blocking(s.browser.findElement(By.cssSelector(".progress progress")).getAttribute("max"))
      _ <- click(s, s"tr[data-task='${ids("c")}'] td:first-child a")
      _ <- heading(s, s"Task ${ids("c")}")
      _ <- click(s, "dl.task a.workflow")
      _ <- heading(s, s"Workflow $w")
    yield
      assertEquals(layers, List("0" -> List(w), "1" -> List(ids("b"), ids("c"))))
      assertEquals(max, "3")
  }

  journey("screenshots of every page, when asked for") { s =>
    val dir = sys.env.get("WEIR_CONSOLE_SCREENSHOTS").filter(_.nonEmpty)
    assume(dir.isDefined, "WEIR_CONSOLE_SCREENSHOTS is not set: no screenshots")
    val pages = Vector(
      "console-overview" -> ("", "Overview"),
      "console-queue" -> ("queues/emails", "Queue emails"),
      "console-tasks" -> ("tasks", "Tasks"),
      "console-task" -> (s"tasks/${s.fixture.available.head}", s"Task ${s.fixture.available.head}"),
      "console-keys" -> ("keys", "Keys"),
      "console-workers" -> ("workers", "Workers"),
      "console-schedules" -> ("schedules", "Schedules")
    )
    val out = Paths.get(dir.get)
    pages.traverse { case (name, (path, title)) =>
      open(s, path) *> heading(s, title) *>
        (if path.isEmpty then await(s, "the chart")(d => all(d, ".throughput canvas").headOption).void
         else IO.unit) *>
        IO.blocking {
          val png = s.browser.asInstanceOf[TakesScreenshot].getScreenshotAs(OutputType.BYTES)
          Files.createDirectories(out)
          Files.write(out.resolve(s"$name.png"), png)
        }
    }.map(files => assert(files.forall(f => Files.size(f) > 10000), files))
  }
