package weir.postgres.internal

import io.circe.Json
import io.circe.parser.decode as decodeJson

/**
 * How a task's headers travel to and from the `headers` column: a JSON object of strings, or no value at
 * all when there are none, so that a task without headers stores NULL and its claim decodes nothing.
 */
private[postgres] object HeaderCodec:

  /** The JSON object's text, or `None` for no headers. */
  def encode(headers: Map[String, String]): Option[String] =
    if headers.isEmpty then None
    else Some(Json.fromFields(headers.view.map((k, v) => k -> Json.fromString(v))).noSpaces)

  /** The headers of a claimed row: none for NULL (a task enqueued without headers, or before they existed). */
  def decode(json: Option[String]): Either[Throwable, Map[String, String]] =
    json match
      case None => none
      case Some(text) => decodeJson[Map[String, String]](text)

  // the answer for nearly every claimed row, built once
  private val none: Either[Throwable, Map[String, String]] = Right(Map.empty)
