package weir.postgres.internal

import java.util.concurrent.ConcurrentHashMap

/**
 * The claims a worker holds and has not yet finished in the database: id -> attempt. The claimer adds a
 * claim before handing its task on; the completer removes it once its finish has committed. The heartbeat
 * extends the leases of exactly these tasks, so a task this process forgot is not kept alive by it.
 */
private[postgres] final class Claims:
  private val held = new ConcurrentHashMap[Long, Int]

  def add(id: Long, attempt: Int): Unit = held.put(id, attempt): Unit
  def remove(id: Long): Unit = held.remove(id): Unit
  def size: Int = held.size
  def ids: Array[Long] =
    val out = Array.newBuilder[Long]
    held.keySet.forEach(id => out += id)
    out.result()
