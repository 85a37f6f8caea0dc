package weir.postgres

import org.scalacheck.Gen

/** Header sets for properties: text from every plane of Unicode, and text a header may not hold. */
object HeaderGen:

  /** A code point other than NUL and the surrogates: ASCII, the rest of the BMP, and beyond it (emoji). */
  val codePoint: Gen[Int] = Gen.frequency(
    4 -> Gen.choose(1, 0x7f),
    2 -> Gen.choose(0x80, 0xd7ff),
    1 -> Gen.choose(0xe000, 0xfffd),
    2 -> Gen.choose(0x10000, 0x10ffff)
  )

  /** Well-formed text without NUL, up to `max` code points. */
  def text(max: Int): Gen[String] =
    Gen.choose(0, max).flatMap(n => Gen.listOfN(n, codePoint)).map(cps =>
      new String(cps.toArray, 0, cps.size)
    )

  /** A header set NewTask accepts: non-empty keys, any well-formed values, far below the size limit. */
  val headers: Gen[Map[String, String]] =
    Gen.choose(0, 6).flatMap(n => Gen.mapOfN(n, Gen.zip(text(12).suchThat(_.nonEmpty), text(40))))

  /** A string that may hold what a header cannot: NUL, half of a surrogate pair, or be empty. */
  val anyString: Gen[String] =
    Gen
      .listOf(Gen.frequency(
        8 -> codePoint.map(Character.toChars(_).mkString),
        1 -> Gen.const("\u0000"),
        1 -> Gen.choose(0xd800, 0xdfff).map(_.toChar.toString)
      ))
      .map(_.take(8).mkString)
