package weir.postgres

import weir.Validation

/**
 * The PostgreSQL schema that holds weir's tables and functions (default `weir`). Several schemas in one
 * database are independent weir installations.
 *
 * The name is spliced into SQL text (a schema cannot be a bind parameter), so only plain lower-case
 * identifiers are accepted: a letter or `_`, then letters, digits or `_`, at most 63 characters. Naming
 * another throws nothing: every use of the schema goes through a [[Database]], whose `connect` and
 * `migrate` check it ([[errors]]) before any SQL is sent, and fail with [[weir.InvalidSettings]].
 */
final class Schema private (val name: String):

  /** What is wrong with the name, naming it; empty when it is a plain lower-case identifier. */
  def errors: List[String] =
    Validation.check(
      name != null && Schema.identifier.matches(name),
      s"schema name must be a lower-case SQL identifier (a letter or _, then letters, digits or _, at most 63), was: '$name'"
    )

  /** `name.relation`: a table or function of this schema, for SQL text (`schema("tasks")`). */
  def apply(relation: String): String = s"$name.$relation"

  /** The channel that wakes a queue's workers (the queue is the payload), named after the schema. */
  private[postgres] def channel: String = s"$name.tasks"

  /**
   * The channel that tells workers to interrupt a running task: the payload is the claim's lease token, a
   * space, and the reason (see [[TaskActions.cancel]]).
   */
  private[postgres] def cancelChannel: String = s"$name.cancels"

  /** A 64-bit key for `purpose` in this schema, the same in every JVM and release (FNV-1a of the text). */
  private[postgres] def key(purpose: String): Long =
    s"weir.$purpose:$name".foldLeft(0xcbf29ce484222325L)((h, c) => (h ^ c.toLong) * 0x100000001b3L)

  /**
   * The first half of the advisory lock a live worker holds on its session, `(sessionLockClass, id)`; the
   * two-integer form keeps it apart from the one-integer locks of migrations and of users.
   */
  private[postgres] def sessionLockClass: Int = (key("session") & 0x7fffffffL).toInt

  override def equals(other: Any): Boolean = other match
    case s: Schema => s.name == name
    case _ => false
  override def hashCode: Int = name.hashCode
  override def toString: String = name

object Schema:

  /** `weir`. */
  val default: Schema = new Schema("weir")

  private val identifier = "[a-z_][a-z0-9_]{0,62}".r

  /** The schema `name`, checked where it is used ([[Schema#errors]]): a plain lower-case identifier. */
  def apply(name: String): Schema = new Schema(name)
