package weir.console.internal

import cats.effect.SyncIO
import org.typelevel.vault.Key
import weir.console.ConsoleAccess

/**
 * Who is asking, as the console's [[Gate]] decided for this request: the access, the CSRF token of the
 * forms when the access is to act, and how the console decides access (which the pages' header shows:
 * the operator's name, a log-in link or a read-only badge).
 */
private[console] final case class Caller(access: ConsoleAccess, csrf: Option[String], mode: Caller.Mode)

private[console] object Caller:

  /** How a console decides access. */
  enum Mode:
    /** Readers log in with the admin token to act. */
    case OwnLogin

    /** No one acts: the console was given no admin token. */
    case ReadOnly

    /** The host app's function decides. */
    case Host

  /** Where the [[Gate]] leaves its decision on a request, for the routes behind it. */
  val key: Key[Caller] = Key.newKey[SyncIO, Caller].unsafeRunSync()

  /** A request the gate did not see (an asset): reads only, names no one. */
  val nobody: Caller = Caller(ConsoleAccess.Read(""), None, Mode.ReadOnly)
