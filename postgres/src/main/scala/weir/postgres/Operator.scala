package weir.postgres

import weir.Validation

/**
 * Who performs the actions of a [[TaskAdmin]], as the audit log records them: a `name` (1 to 200
 * characters), and optionally a `session` (at most 200) that tells one operator's sessions apart. Neither is
 * a secret: both are stored, and shown by the console's audit page.
 */
final case class Operator(name: String, session: Option[String] = None):

  /** What is wrong with this operator, each bad value named (by its length); empty when valid. */
  def errors: List[String] =
    Validation.check(
      name != null && name.trim.nonEmpty && name.length <= Operator.maxName,
      s"an operator's name must have 1 to ${Operator.maxName} characters, was: ${
          if name == null then "null" else s"${name.length} characters"
        }"
    ) ++
      session.toList.flatMap(s =>
        Validation.check(
          s != null && s.length <= Operator.maxName,
          s"an operator's session must have at most ${Operator.maxName} characters, was: ${
              if s == null then "null" else s"${s.length} characters"
            }"
        )
      )

object Operator:

  /** The longest name or session recorded. */
  val maxName: Int = 200

  /** What `TaskAdmin(db)` records: code that does not name itself. */
  val code: Operator = Operator("code")
