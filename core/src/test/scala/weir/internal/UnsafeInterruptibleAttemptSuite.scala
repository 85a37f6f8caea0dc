package weir.internal

import munit.FunSuite
import weir.{Interruptible, Interruption}

import java.util.concurrent.CyclicBarrier
import java.util.concurrent.atomic.AtomicInteger

/**
 * The race an [[UnsafeInterruptibleAttempt]] settles, on its own: the handler's end against the interruption,
 * and an interruption that comes during the registration.
 */
class UnsafeInterruptibleAttemptSuite extends FunSuite:

  /** A task holding an [[Interruption]], counting unregistrations. */
  final class Task extends Interruptible:
    val interruption = new Interruption
    val unregistered = new AtomicInteger
    def tryStart(): Option[String] = interruption.requested
    def onInterrupt(interrupt: String => Unit): () => Unit =
      val off = interruption.onInterrupt(interrupt)
      () =>
        unregistered.incrementAndGet()
        off()

  private def attempt() =
    val cancels = new AtomicInteger
    (new UnsafeInterruptibleAttempt(() => cancels.incrementAndGet(): Unit), cancels)

  /** A worker as the registration sees it: what it was told is attempting, and its cancellations. */
  final class Owner extends UnsafeInterruptibleAttempt.Owner:
    var noted: List[UnsafeInterruptibleAttempt] = Nil
    val cancels = new AtomicInteger
    def attempting(attempt: UnsafeInterruptibleAttempt): Unit = noted = attempt :: noted
    val interrupt: () => Unit = () => cancels.incrementAndGet(): Unit

  test(
    "register: the attempt registered is the one noted on its worker, and its interruption cancels that worker"
  ) {
    val task = new Task
    val owner = new Owner
    UnsafeInterruptibleAttempt.register(task, owner, asked = true) match
      case a: UnsafeInterruptibleAttempt =>
        assertEquals(owner.noted, List(a))
        assert(task.interruption.request("stop"))
        assertEquals(owner.cancels.get, 1)
        assertEquals(a.cancelled(), Some("stop"))
      case other => fail(s"expected a registration, got $other")
  }

  test("register: a task told to stop before is refused with its reason, nothing noted, no cancellation") {
    for asked <- List(true, false) do
      val task = new Task
      val owner = new Owner
      assert(task.interruption.request("before"))
      assertEquals(
        UnsafeInterruptibleAttempt.register(task, owner, asked),
        UnsafeInterruptibleAttempt.Refused("before")
      )
      assertEquals(owner.noted, Nil, s"asked = $asked")
      assertEquals(owner.cancels.get, 0, s"asked = $asked")
  }

  test("register: a retry asks the task's refusal first, and a refusing task is never registered") {
    val owner = new Owner
    var registrations = 0
    val refusing = new Interruptible:
      def tryStart(): Option[String] = Some("no more")
      def onInterrupt(interrupt: String => Unit): () => Unit =
        registrations += 1
        () => ()
    assertEquals(
      UnsafeInterruptibleAttempt.register(refusing, owner, asked = true),
      UnsafeInterruptibleAttempt.Refused("no more")
    )
    assertEquals(registrations, 0)
    // not asked (a first attempt, whose refusal its start asked; a retry's wait): registered
    assert(UnsafeInterruptibleAttempt.register(
      refusing,
      owner,
      asked = false
    ).isInstanceOf[UnsafeInterruptibleAttempt])
    assertEquals(registrations, 1)
  }

  test("an interruption while the attempt runs has the worker cancelled, once, and wins over a later end") {
    val task = new Task
    val (a, cancels) = attempt()
    assertEquals(a.start(task), None)
    assert(task.interruption.request("stop"))
    assertEquals(cancels.get, 1)
    assert(!a.ended(), "the end came after the interruption: the worker must wait for its cancellation")
    assertEquals(a.cancelled(), Some("stop"))
    assertEquals(task.unregistered.get, 0) // an interrupted attempt has nothing to unregister
  }

  test("an end before the interruption unregisters, and a later interruption cancels nothing") {
    val task = new Task
    val (a, cancels) = attempt()
    assertEquals(a.start(task), None)
    assert(a.ended())
    assertEquals(task.unregistered.get, 1)
    assert(task.interruption.request("too late"))
    assertEquals(cancels.get, 0)
    assertEquals(a.cancelled(), None) // a cancellation now would be the run's, not the task's
  }

  test("a task told to stop before the attempt refuses it at the registration, without a cancellation") {
    val task = new Task
    assert(task.interruption.request("before"))
    val (a, cancels) = attempt()
    assertEquals(a.start(task), Some("before"))
    assertEquals(cancels.get, 0)
    assertEquals(a.cancelled(), None)
  }

  test("a worker cancelled by the run during the attempt undoes the registration, and is not interrupted") {
    val task = new Task
    val (a, cancels) = attempt()
    assertEquals(a.start(task), None)
    assertEquals(a.cancelled(), None)
    assertEquals(task.unregistered.get, 1)
    assert(task.interruption.request("after the run's cancellation"))
    assertEquals(cancels.get, 0)
  }

  test("the end and the interruption racing on two threads: exactly one of them wins, every time") {
    val barrier = new CyclicBarrier(2)
    (1 to 2000).foreach { round =>
      val task = new Task
      val (a, cancels) = attempt()
      assertEquals(a.start(task), None)
      val interrupter = new Thread(() =>
        barrier.await()
        task.interruption.request(s"round $round"): Unit
      )
      interrupter.start()
      barrier.await()
      val endedFirst = a.ended()
      interrupter.join()
      assertEquals(cancels.get, if endedFirst then 0 else 1, s"round $round")
      assertEquals(task.unregistered.get, if endedFirst then 1 else 0, s"round $round")
      assertEquals(a.cancelled(), if endedFirst then None else Some(s"round $round"), s"round $round")
    }
  }
