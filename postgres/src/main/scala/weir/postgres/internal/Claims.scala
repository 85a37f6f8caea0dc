package weir.postgres.internal

import java.util.concurrent.ConcurrentHashMap

/**
 * The claims a worker holds and has not yet finished in the database, by token. The claimer adds a claim
 * before handing its task on; the completer removes it once its finish has committed. The heartbeat
 * extends the leases of exactly these claims, so a task this process forgot is not kept alive by it.
 */
private[postgres] final class Claims:
  private val held = ConcurrentHashMap.newKeySet[Long]()

  def add(token: Long): Unit = held.add(token): Unit
  def remove(token: Long): Unit = held.remove(token): Unit
  def size: Int = held.size
  def tokens: Array[Long] =
    val out = Array.newBuilder[Long]
    held.forEach(token => out += token)
    out.result()
