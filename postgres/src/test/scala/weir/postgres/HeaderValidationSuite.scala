package weir.postgres

import munit.ScalaCheckSuite
import org.scalacheck.Gen
import org.scalacheck.Prop.forAll

/**
 * What NewTask accepts as headers, and how it names what it refuses (its `errors`, which an enqueue raises
 * as [[weir.InvalidSettings]]: see EnqueueSuite). Building a task with bad headers never throws.
 */
class HeaderValidationSuite extends ScalaCheckSuite:

  private def refusal(headers: Map[String, String]): String =
    val errors = NewTask(1, headers = headers).errors
    assert(errors.nonEmpty, s"$headers accepted")
    errors.mkString("; ")

  // the rule NewTask must follow, written independently of it: code points, not chars, and UTF-8's lengths
  private def storable(s: String): Boolean =
    !s.contains('\u0000') && s.codePoints().allMatch(cp => cp < 0xd800 || cp > 0xdfff)

  private def utf8(s: String): Int = s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length

  property("a header set is accepted exactly when its keys are non-empty, its text storable and it fits") {
    val pairs = Gen.zip(HeaderGen.anyString, HeaderGen.anyString)
    forAll(Gen.choose(0, 4).flatMap(Gen.mapOfN(_, pairs))) { headers =>
      val ok = headers.forall((k, v) => k.nonEmpty && storable(k) && storable(v))
      val task = NewTask(1, headers = headers)
      assertEquals(task.errors.isEmpty, ok, headers.toString)
      assertEquals(task.headers, headers)
    }
  }

  property("the size limit counts keys and values in bytes of UTF-8, and the refusal says how many") {
    forAll(Gen.choose(0, 3).flatMap(Gen.listOfN(_, HeaderGen.codePoint)), Gen.choose(-2, 2)) {
      (tail, slack) =>
        // a value that brings the set to the limit plus `slack` bytes, ending in multi-byte text
        val end = new String(tail.toArray, 0, tail.size)
        val key = "k"
        val fill = NewTask.maxHeaderBytes - utf8(key) - utf8(end) + slack
        val headers = Map(key -> ("x" * fill + end))
        val bytes = utf8(key) + utf8(headers(key))
        if bytes <= NewTask.maxHeaderBytes then assertEquals(NewTask(1, headers = headers).errors, Nil)
        else
          val message = refusal(headers)
          assert(message.contains(s"was: $bytes bytes"), message)
          assert(message.contains("'k'"), message)
    }
  }

  test("an empty key is refused, naming its value") {
    val message = refusal(Map("" -> "00-abc-01"))
    assert(message.contains("header keys must not be empty"), message)
    assert(message.contains("'00-abc-01'"), message)
  }

  test("a NUL or half a surrogate pair is refused, naming the key and showing the character") {
    val nul = refusal(Map("tenant" -> "a\u0000b"))
    assert(nul.contains("'tenant'") && nul.contains("'a\\u0000b'"), nul)
    val surrogate = refusal(Map("x" -> "\ud83d"))
    assert(surrogate.contains("'\\ud83d'"), surrogate)
    val inKey = refusal(Map("k\u0000" -> "v"))
    assert(inKey.contains("'k\\u0000'"), inKey)
  }

  test("a null value is refused, naming its key") {
    val message = refusal(Map("tenant" -> null))
    assert(message.contains("header 'tenant' must have a value, was: null"), message)
  }

  test("a long bad value is shown cut, not whole") {
    val message = refusal(Map("" -> "y" * 10000))
    assert(message.length < 400, message.length.toString)
  }
