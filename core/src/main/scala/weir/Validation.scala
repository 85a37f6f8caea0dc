package weir

import cats.ApplicativeThrow
import cats.effect.kernel.Resource

/**
 * The one way weir checks settings, for its modules and for code that wraps them: a record lists its
 * problems with [[Validation.check]] (`errors: List[String]`, empty when it is valid), nests the lists of
 * the records it holds with [[Validation.nested]], and whatever uses it fails in `F` with an
 * [[InvalidSettings]] naming all of them ([[Validation.raise]]).
 *
 * {{{
 * def errors: List[String] =
 *   Validation.check(claimBatch > 0, s"claimBatch must be > 0, was: $claimBatch") ++
 *     Validation.check(ackBatch > 0, s"ackBatch must be > 0, was: $ackBatch") ++
 *     Validation.nested("backoff", backoff.errors)
 * }}}
 *
 * Checks run where the settings are used, once (a run's start, a connect), never per task.
 */
object Validation:

  /** `error` unless `ok` holds; nothing otherwise. */
  def check(ok: Boolean, error: => String): List[String] = if ok then Nil else List(error)

  /** `errors` of a record held in the field `field`, each prefixed with `field: `. */
  def nested(field: String, errors: List[String]): List[String] = errors.map(e => s"$field: $e")

  /** Fails with [[InvalidSettings]]`(settings, errors)` when there is any error; does nothing otherwise. */
  def raise[F[_]](settings: String, errors: List[String])(using F: ApplicativeThrow[F]): F[Unit] =
    if errors.isEmpty then F.unit else F.raiseError(new InvalidSettings(settings, errors))

  /** [[raise]] as the first step of a resource. */
  def resource[F[_]](settings: String, errors: List[String])(using
      F: ApplicativeThrow[F]
  ): Resource[F, Unit] =
    Resource.eval(raise(settings, errors))
