package weir.internal

import munit.FunSuite

import java.util.concurrent.CountDownLatch

class UnsafeSpinLockSuite extends FunSuite:

  test(
    "four threads adding to a plain field under the lock: no addition is lost, and no two hold it at once"
  ) {
    val lock = new UnsafeSpinLock
    var total = 0L // a plain field: only the lock keeps the additions apart
    var holders = 0
    var overlaps = 0
    val go = new CountDownLatch(1)
    val threads = (1 to 4).map { _ =>
      new Thread(() =>
        go.await()
        (1 to 100000).foreach { _ =>
          lock.lock()
          try
            holders += 1
            if holders != 1 then overlaps += 1
            total += 1
            holders -= 1
          finally lock.unlock()
        }
      )
    }
    threads.foreach(_.start())
    go.countDown()
    threads.foreach(_.join(60000))
    assert(threads.forall(!_.isAlive), "a thread did not finish")
    lock.lock()
    try
      assertEquals(total, 400000L)
      assertEquals(overlaps, 0)
    finally lock.unlock()
  }

  test("released, it is free: a later lock does not wait") {
    val lock = new UnsafeSpinLock
    lock.lock()
    lock.unlock()
    assert(lock.compareAndSet(false, true), "the lock was still held after unlock")
  }
