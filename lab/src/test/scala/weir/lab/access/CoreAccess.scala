package weir.lab.access

import scala.collection.mutable
import scala.quoted.*
import scala.tasty.inspector.{Inspector, Tasty, TastyInspector}

/**
 * Finds, in compiled TASTy, every reference to a member of weir-core that is not public: a symbol of core's
 * main code that is qualified-private (`private[weir]`, `protected[weir]`, whatever the qualifier), or that
 * is a member of such a class or object. Scala compiles a qualified-private member to public bytecode, so
 * another module can reach it as long as its sources sit in package `weir`; only the TASTy, which keeps the
 * qualifier, shows the use.
 *
 * `core` names core's top-level definitions, as their TASTy files do (`weir.Pipeline`,
 * `weir.internal.Engine`): a symbol belongs to core when its top-level owner is one of them.
 */
final class CoreAccess(core: Set[String]) extends Inspector:
  private val found = mutable.LinkedHashSet.empty[CoreAccess.Use]

  /** The uses found so far, each once, in the order found. */
  def uses: Vector[CoreAccess.Use] = found.toVector

  def inspect(using Quotes)(tastys: List[Tasty[quotes.type]]): Unit =
    import quotes.reflect.*

    def topLevel(s: Symbol): Symbol =
      if s.isNoSymbol || s.isPackageDef || s.owner.isNoSymbol || s.owner.isPackageDef then s
      else topLevel(s.owner)

    def ofCore(s: Symbol): Boolean =
      val top = topLevel(s)
      !top.isNoSymbol && !top.isPackageDef && core(top.fullName.stripSuffix("$"))

    // the first qualified-private symbol among `s` and its owners, up to its top-level definition
    def hidden(s: Symbol): Option[Symbol] =
      if s.isNoSymbol || s.isPackageDef then None
      else if s.privateWithin.isDefined || s.protectedWithin.isDefined then Some(s)
      else hidden(s.owner)

    def check(s: Symbol, pos: Position): Unit =
      if !s.isNoSymbol && ofCore(s) then
        hidden(s).foreach { h =>
          val qualifier = h.privateWithin.orElse(h.protectedWithin).fold("")(q => q.typeSymbol.name)
          val what = if h == s then s.fullName else s"${s.fullName} (a member of ${h.fullName})"
          found += CoreAccess.Use(pos.sourceFile.path, pos.startLine + 1, what, qualifier)
        }

    // the symbols an inferred type names: a value of a hidden type needs no tree that names it
    def checkType(t: TypeRepr, pos: Position, depth: Int): Unit =
      if depth < 8 then
        t match
          case ref: TypeRef => check(ref.typeSymbol, pos)
          case ref: TermRef => check(ref.termSymbol, pos)
          case AppliedType(tycon, args) => (tycon :: args).foreach(checkType(_, pos, depth + 1))
          case AndType(a, b) => checkType(a, pos, depth + 1); checkType(b, pos, depth + 1)
          case OrType(a, b) => checkType(a, pos, depth + 1); checkType(b, pos, depth + 1)
          case _ => ()

    object References extends TreeTraverser:
      override def traverseTree(tree: Tree)(owner: Symbol): Unit =
        tree match
          case ref: Ref => check(ref.symbol, ref.pos)
          case tpt: TypeTree =>
            check(tpt.symbol, tpt.pos)
            checkType(tpt.tpe, tpt.pos, 0)
          case _ => ()
        super.traverseTree(tree)(owner)

    tastys.foreach(t => References.traverseTree(t.ast)(Symbol.noSymbol))

object CoreAccess:

  /** A use of `symbol` (qualified-private to `qualifier`) at `line` of `file`. */
  final case class Use(file: String, line: Int, symbol: String, qualifier: String):
    override def toString: String = s"$file:$line: $symbol (private[$qualifier] in weir-core)"

  /**
   * The uses in `tastyFiles` and in the jars `jars`, of core's definitions `core`, symbols resolved on
   * `classpath`; fails if the inspector reports an error.
   */
  def find(
      core: Set[String],
      tastyFiles: List[String],
      jars: List[String],
      classpath: List[String]
  ): Vector[Use] =
    val inspector = new CoreAccess(core)
    val ok = TastyInspector.inspectAllTastyFiles(tastyFiles, jars, classpath)(inspector)
    if !ok then throw new IllegalStateException(s"the TASTy inspector failed on ${tastyFiles ++ jars}")
    inspector.uses
