package weir.postgres.internal

import java.util.concurrent.ConcurrentHashMap

/**
 * The claims a worker holds and has not yet finished in the database, by token, each with whether its task
 * has an ordering key. The claimer adds a claim before handing its task on; the completer removes it once
 * its finish has committed. The heartbeat extends the leases of exactly these claims, so a task this process
 * forgot is not kept alive by it.
 */
private[postgres] final class Claims:
  private val held = new ConcurrentHashMap[Long, java.lang.Boolean]

  def add(token: Long, keyed: Boolean): Unit = held.put(token, keyed): Unit

  /** Forgets a claim; true if its task had an ordering key. */
  def remove(token: Long): Boolean = Option(held.remove(token)).exists(_.booleanValue)

  def isKeyed(token: Long): Boolean = Option(held.get(token)).exists(_.booleanValue)

  def size: Int = held.size
  def tokens: Array[Long] =
    val out = Array.newBuilder[Long]
    held.keySet.forEach(token => out += token)
    out.result()
