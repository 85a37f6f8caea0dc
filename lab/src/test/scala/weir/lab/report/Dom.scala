package weir.lab.report

/**
 * What the tests read in a browser's serialized DOM: the body's attributes, the charts and the tables.
 * Regular expressions suffice: the browser writes every attribute as `name="value"`.
 */
final case class Dom(html: String):

  private val attribute = """([a-z-]+)="([^"]*)"""".r

  private def attributes(tag: String): Map[String, String] =
    attribute.findAllMatchIn(tag).map(m => m.group(1) -> m.group(2)).toMap

  /** The `<body>` element's attributes. */
  def body: Map[String, String] =
    """<body[^>]*>""".r.findFirstIn(html).fold(Map.empty[String, String])(attributes)

  /** Each chart's name (its id without `chart-`) and its `data-rendered` mark, in page order. */
  def charts: List[(String, Option[String])] =
    """<figure[^>]*>""".r.findAllIn(html).map(attributes).filter(_.get("class").contains("chart")).map { a =>
      (a.getOrElse("id", "").stripPrefix("chart-"), a.get("data-rendered"))
    }.toList

  /** The first cell of every row of the table `id`, header included; empty when there is no such table. */
  def firstColumn(id: String): List[String] =
    s"""(?s)<table id="${java.util.regex.Pattern.quote(id)}">(.*?)</table>""".r.findFirstMatchIn(html).toList
      .flatMap { table =>
        """(?s)<tr>\s*<t[hd][^>]*>(.*?)</t[hd]>""".r.findAllMatchIn(table.group(1)).map(_.group(1)).toList
      }
