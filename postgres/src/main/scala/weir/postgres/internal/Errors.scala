package weir.postgres.internal

/** How an error is written into a task's errors: class, message and causes, cut to a bounded length. */
private[postgres] object Errors:
  val maxLength: Int = 2000

  def describe(e: Throwable): String =
    val parts = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(5).map { t =>
      val message = Option(t.getMessage).fold("")(m => s": $m")
      s"${t.getClass.getName}$message"
    }
    val text = parts.mkString(" / caused by ")
    if text.length <= maxLength then text else text.take(maxLength - 1) + "…"
