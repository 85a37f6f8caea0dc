package weir.cli

/** Plain-text tables for the experiments' terminal output. */
object Table:

  /** Columns padded to their widest cell, separated by two spaces. */
  def grid(cells: Vector[Vector[String]], rightAligned: Set[Int]): String =
    val widths = cells.transpose.map(_.map(_.length).max)
    cells.map { row =>
      row.zipWithIndex.map { (c, i) =>
        if rightAligned(i) then " " * (widths(i) - c.length) + c else c + " " * (widths(i) - c.length)
      }.mkString("  ").stripTrailing
    }.mkString("  ", "\n  ", "\n")
