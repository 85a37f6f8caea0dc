package cats.effect.unsafe

import cats.effect.{Deferred, IO, Selector}
import cats.effect.syntax.all.*
import cats.syntax.all.*
import munit.FunSuite
import weir.runtime.WeirRuntime

import java.nio.ByteBuffer
import java.net.URLClassLoader
import java.nio.channels.{Pipe, SelectionKey}
import java.nio.file.Files
import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicReference
import java.util.jar.{Attributes, JarEntry, JarOutputStream, Manifest}
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*
import scala.util.Using

/**
 * The patient polling system: its wait for the waker, its parks and wake-ups on a plain thread, its choice
 * by Cats Effect release (the one it was written against, read from the jar or recognised in a fat jar,
 * or any other, which falls back and warns), and the compute pool of weir's runtime parking through it for
 * timers, fiber wake-ups and selector events.
 */
class PatientSelectorSystemSuite extends FunSuite:

  override def munitTimeout: Duration = 60.seconds

  private def onThread(body: => Unit): CountDownLatch =
    val done = new CountDownLatch(1)
    val thread = new Thread(() => { body; done.countDown() })
    thread.setDaemon(true)
    thread.start()
    done

  test("awaitWaker returns at once unless the signal reads Interrupting") {
    for signal <- List(ParkedSignal.Unparked, ParkedSignal.ParkedSimple, ParkedSignal.ParkedPolling) do
      val done = onThread(PatientSelectorSystem.awaitWaker(new AtomicReference(signal)))
      assert(done.await(10, TimeUnit.SECONDS), s"still waiting on $signal")
  }

  test("awaitWaker waits while the signal reads Interrupting, past its spins and yields into short parks") {
    val signal = new AtomicReference[ParkedSignal](ParkedSignal.Interrupting)
    val done = new CountDownLatch(1)
    val waiting = new Thread(() => { PatientSelectorSystem.awaitWaker(signal); done.countDown() })
    waiting.setDaemon(true)
    waiting.start()
    // seen parked (its last stage) while the signal still reads Interrupting: it has not returned
    val deadline = System.nanoTime() + 10.seconds.toNanos
    var parked = false
    while !parked && System.nanoTime() < deadline do parked = waiting.getState == Thread.State.TIMED_WAITING
    assert(parked, "never seen in its short parks")
    assertEquals(done.getCount, 1L, "returned while the waker was still waking it")
    signal.set(ParkedSignal.Unparked)
    assert(done.await(10, TimeUnit.SECONDS), "still waiting after the waker finished")
  }

  test("poll without channels: a zero wait returns at once, a timed wait times out, interrupt ends a park") {
    val system = PatientSelectorSystem()
    val poller = system.makePoller()
    try
      assert(system.needsPoll(poller))
      assertEquals(system.poll(poller, 0L), PollResult.Interrupted)
      assertEquals(system.poll(poller, 1.millis.toNanos), PollResult.Interrupted)
      val result = new AtomicReference[PollResult]
      val parked = new CountDownLatch(1)
      val polling = new Thread(() => { parked.countDown(); result.set(system.poll(poller, -1L)) })
      polling.setDaemon(true)
      polling.start()
      assert(parked.await(10, TimeUnit.SECONDS))
      while polling.getState != Thread.State.WAITING do Thread.onSpinWait()
      system.interrupt(polling, poller)
      polling.join(10_000)
      assert(!polling.isAlive, "interrupt did not end the park")
      assertEquals(result.get, PollResult.Interrupted)
    finally system.closePoller(poller)
  }

  test("the Cats Effect on the class path is the release the patch was written against, read both ways") {
    val loader = classOf[WorkerThread[?]].getClassLoader
    assertEquals(CatsEffectVersion.fromManifest(loader), Some(PatientSelectorSystem.WrittenAgainst))
    assertEquals(CatsEffectVersion.fromFingerprint(loader), Some(PatientSelectorSystem.WrittenAgainst))
    assertEquals(CatsEffectVersion.onClassPath(), Some(PatientSelectorSystem.WrittenAgainst))
  }

  // A jar with the watched classes under an application's manifest, as maven-shade or sbt-assembly make it;
  // `change` may alter each class file's bytes.
  private def repackaged(change: Array[Byte] => Array[Byte]): URLClassLoader =
    val jar = Files.createTempFile("weir-fat", ".jar")
    jar.toFile.deleteOnExit()
    val manifest = new Manifest()
    manifest.getMainAttributes.put(Attributes.Name.MANIFEST_VERSION, "1.0")
    manifest.getMainAttributes.put(Attributes.Name.IMPLEMENTATION_TITLE, "some-application")
    manifest.getMainAttributes.put(Attributes.Name.IMPLEMENTATION_VERSION, "1.0.0")
    val real = classOf[WorkerThread[?]].getClassLoader
    Using.resource(new JarOutputStream(Files.newOutputStream(jar), manifest)) { out =>
      CatsEffectVersion.Watched.foreach { name =>
        out.putNextEntry(new JarEntry(name))
        out.write(change(Using.resource(real.getResourceAsStream(name))(_.readAllBytes())))
        out.closeEntry()
      }
    }
    new URLClassLoader(Array(jar.toUri.toURL), null)

  test("in a fat jar, whose manifest is the application's, the release is recognised by its classes") {
    Using.resource(repackaged(identity)) { loader =>
      assertEquals(CatsEffectVersion.fromManifest(loader), None)
      assertEquals(CatsEffectVersion.onClassPath(loader), Some(PatientSelectorSystem.WrittenAgainst))
    }
  }

  test("in a fat jar, classes that differ by one byte from the release's are of an unknown version") {
    Using.resource(repackaged(bytes => bytes :+ 0.toByte)) { loader =>
      assertEquals(CatsEffectVersion.onClassPath(loader), None)
    }
  }

  test("on the release it was written against, the patient system is chosen and nothing is said") {
    val said = new ConcurrentLinkedQueue[String]
    val system = PatientSelectorSystem.choose(Some(PatientSelectorSystem.WrittenAgainst), said.add(_): Unit)
    assert(system.isInstanceOf[PatientSelectorSystem], system.toString)
    assertEquals(said.asScala.toList, Nil)
  }

  test("on another release, or an unknown one, Cats Effect's default polling system is chosen, said once") {
    val lines = new ConcurrentLinkedQueue[String]
    val once = new PatientSelectorSystem.Once(lines.add(_): Unit)
    val other = PatientSelectorSystem.choose(Some("3.7.2"), once)
    val unknown = PatientSelectorSystem.choose(None, once)
    for system <- List(other, unknown) do
      assert(!system.isInstanceOf[PatientSelectorSystem], system.toString)
      assertEquals(system.getClass, IORuntime.createDefaultPollingSystem().getClass)
    assertEquals(lines.asScala.toList.length, 1, lines.toString)
    val line = lines.peek()
    assert(line.contains(s"written against Cats Effect ${PatientSelectorSystem.WrittenAgainst}"), line)
    assert(line.contains("on the class path is 3.7.2"), line)
    assert(line.contains("default polling system"), line)
  }

  test("an unknown release is named as such in the warning") {
    val lines = new ConcurrentLinkedQueue[String]
    val _ = PatientSelectorSystem.choose(None, lines.add(_): Unit)
    assert(lines.peek().contains("on the class path is of an unknown version"), lines.toString)
  }

  test("weir's runtime parks its compute threads through the patient system") {
    val (runtime, shutdown) = WeirRuntime.unsafeCreate()
    try
      runtime.compute match
        case pool: WorkStealingThreadPool[?] => assert(pool.system.isInstanceOf[PatientSelectorSystem])
        case other => fail(s"compute pool is not Cats Effect's work-stealing pool: $other")
    finally shutdown()
  }

  test("on weir's runtime, fibers woken by timers wake others: every round ends, every value arrives") {
    val (runtime, shutdown) = WeirRuntime.unsafeCreate()
    try
      val round = (i: Int) =>
        for
          d <- Deferred[IO, Int]
          waiter <- d.get.flatTap(_ => IO.sleep(100.micros)).start
          _ <- IO.sleep(200.micros)
          _ <- d.complete(i)
          got <- waiter.joinWithNever
        yield got
      val rounds = 2000
      val got = (0 until rounds).toList.parTraverseN(8)(round).unsafeRunSync()(using runtime)
      assertEquals(got, (0 until rounds).toList)
    finally shutdown()
  }

  test("on weir's runtime, a compute thread parked on its selector wakes for a channel's data") {
    val (runtime, shutdown) = WeirRuntime.unsafeCreate()
    val pipe = Pipe.open()
    try
      pipe.source().configureBlocking(false)
      val read = Selector.find.flatMap {
        case None => IO.raiseError(new AssertionError("no selector API on weir's runtime"))
        case Some(selector) =>
          selector.select(pipe.source(), SelectionKey.OP_READ) *> IO.blocking {
            val buffer = ByteBuffer.allocate(16)
            val n = pipe.source().read(buffer)
            new String(buffer.array(), 0, n, "UTF-8")
          }
      }
      val write = IO.sleep(50.millis) *>
        IO.blocking(pipe.sink().write(ByteBuffer.wrap("ready".getBytes("UTF-8"))))
      val got = (read, write).parMapN((text, _) => text).unsafeRunSync()(using runtime)
      assertEquals(got, "ready")
    finally
      pipe.source().close()
      pipe.sink().close()
      shutdown()
  }

  test("with the pool's own timers, a compute thread's timed park ends by its deadline and by a wake-up") {
    val runtime = IORuntime.builder().setPollingSystem(PatientSelectorSystem()).build()
    try
      val round = (i: Int) =>
        for
          d <- Deferred[IO, Int]
          waiter <- (IO.sleep(5.millis) *> d.get).start
          _ <- IO.sleep(300.micros)
          _ <- d.complete(i)
          got <- waiter.joinWithNever
        yield got
      val got = (0 until 500).toList.parTraverseN(4)(round).unsafeRunSync()(using runtime)
      assertEquals(got, (0 until 500).toList)
    finally runtime.shutdown()
  }
