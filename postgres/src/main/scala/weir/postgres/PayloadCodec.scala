package weir.postgres

import io.circe.{Decoder, Encoder}
import io.circe.parser.decode as decodeJson

/**
 * How a task's payload is stored: as JSON (the column is `jsonb`, so services in other languages can read
 * and write it). Any type with circe's `Encoder` and `Decoder` has one.
 *
 * A payload that does not decode never reaches the handler: its task goes straight to dead with the
 * decode error, and the worker carries on.
 */
trait PayloadCodec[A]:

  /** JSON text. */
  def encode(a: A): String

  /** The value, or the reason it is not one. */
  def decode(json: String): Either[Throwable, A]

object PayloadCodec:

  def apply[A](using codec: PayloadCodec[A]): PayloadCodec[A] = codec

  given circe[A](using encoder: Encoder[A], decoder: Decoder[A]): PayloadCodec[A] with
    def encode(a: A): String = encoder(a).noSpaces
    def decode(json: String): Either[Throwable, A] = decodeJson[A](json)(using decoder)
