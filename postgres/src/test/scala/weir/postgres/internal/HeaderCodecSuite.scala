package weir.postgres.internal

import munit.ScalaCheckSuite
import org.scalacheck.Prop.forAll
import weir.postgres.HeaderGen

class HeaderCodecSuite extends ScalaCheckSuite:

  property("headers read back from their JSON are the headers written, whatever their text") {
    forAll(HeaderGen.headers) { headers =>
      assertEquals(HeaderCodec.decode(HeaderCodec.encode(headers)), Right(headers))
    }
  }

  test("no headers are no value at all, and no value reads as no headers") {
    assertEquals(HeaderCodec.encode(Map.empty), None)
    assertEquals(HeaderCodec.decode(None), Right(Map.empty[String, String]))
  }

  test("JSON that is not an object of strings does not decode") {
    assert(HeaderCodec.decode(Some("""{"a": 1}""")).isLeft)
    assert(HeaderCodec.decode(Some("""["a"]""")).isLeft)
  }
