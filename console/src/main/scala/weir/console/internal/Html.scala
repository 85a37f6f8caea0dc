package weir.console.internal

/**
 * A piece of HTML. Text reaches a page only through [[Html.text]] or the `html` interpolator, which escape
 * it, so a queue name, a payload or an error message can never inject markup.
 */
private[console] final case class Html(render: String):
  def ++(other: Html): Html = Html(render + other.render)

private[console] object Html:
  val empty: Html = Html("")

  def text(s: String): Html = Html(escape(s))

  def concat(parts: IterableOnce[Html]): Html = Html(parts.iterator.map(_.render).mkString)

  def escape(s: String): String =
    val b = new StringBuilder(s.length + 16)
    s.foreach {
      case '<' => b ++= "&lt;"
      case '>' => b ++= "&gt;"
      case '&' => b ++= "&amp;"
      case '"' => b ++= "&quot;"
      case '\'' => b ++= "&#39;"
      case c => b += c
    }
    b.result()

  extension (sc: StringContext)
    /** Interpolates [[Html]] as it is and anything else as escaped text (an `Option` as its value or nothing). */
    def html(args: Any*): Html =
      val b = new StringBuilder
      sc.parts.iterator.zipAll(args.iterator.map(part), "", "").foreach { (p, a) => b ++= p ++= a }
      Html(b.result())

  private def part(a: Any): String = a match
    case h: Html => h.render
    case Some(x) => part(x)
    case None => ""
    case hs: Iterable[?] => hs.iterator.map(part).mkString
    case x => escape(String.valueOf(x))
