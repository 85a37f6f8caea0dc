package weir.lab.compare.scenarios

import weir.lab.Delay

import cats.syntax.all.*
import io.circe.{Json, JsonObject}

import java.nio.file.{Files, Path}
import scala.util.Try

/**
 * Workload files for `./weir compare --workload FILE`: JSON, one workload or `{"workloads": [...]}`.
 *
 * {{{
 * {"workloads": [{
 *   "name": "bursty-heavy-tail",
 *   "tasks": 1000, "batch": 100,            // required
 *   "producers": 2, "slots": 100, "buffer": 200,  // optional: 2, batch, 2 * batch
 *   "produce": {"fixed": 1000},              // per batch
 *   "consume": {"pareto": {"min": 10, "shape": 1.5, "max": 5000}},  // per task
 *   "burst": {"batches": 3, "pause_ms": 2000}  // optional
 * }]}
 * }}}
 * Delays are whole milliseconds: `{"fixed": ms}`, `{"uniform": {"min", "max"}}`,
 * `{"exponential": {"mean", "min" (default 0), "max" (default 1000 × mean)}}`,
 * `{"pareto": {"min", "shape", "max" (default 1000 × min)}}`.
 *
 * Every error names the file, the workload and the field, and shows the bad value; unknown fields are
 * refused (a misspelt optional field would otherwise be silently ignored).
 */
object WorkloadFile:

  def load(path: Path): Either[String, Vector[Workload]] =
    Try(Files.readString(path)).toEither.left.map(e => s"cannot read workload file $path: ${e.getMessage}")
      .flatMap(parse(_, path.toString))

  def parse(text: String, source: String): Either[String, Vector[Workload]] =
    io.circe.parser.parse(text).left.map(e => s"$source: not valid JSON: ${e.message}").flatMap { json =>
      val items: Either[String, Vector[Json]] = json.asObject match
        case Some(o) if o.contains("workloads") =>
          for
            _ <- known(o, Set("workloads"), "the top level")
            arr <-
              o("workloads").flatMap(_.asArray).toRight("\"workloads\" must be an array of workload objects")
            _ <- Either.cond(arr.nonEmpty, (), "\"workloads\" must not be empty")
          yield arr
        case Some(_) => Right(Vector(json))
        case None =>
          Left(s"the top level must be a workload object or {\"workloads\": [...]}, was: ${short(json)}")
      items.left.map(e => s"$source: $e").flatMap { js =>
        js.zipWithIndex.traverse((j, i) => workload(j, i).left.map(e => s"$source: $e")).flatMap { ws =>
          val dup = ws.groupBy(_.name).collectFirst { case (n, v) if v.size > 1 => n }
          dup.fold(Right(ws))(n => Left(s"$source: workload name '$n' is used more than once"))
        }
      }
    }

  private val fields =
    Set("name", "tasks", "batch", "producers", "slots", "buffer", "produce", "consume", "burst")

  private def workload(json: Json, index: Int): Either[String, Workload] =
    json.asObject.toRight(s"workload #${index + 1} must be an object, was: ${short(json)}").flatMap { o =>
      val name = o("name").flatMap(_.asString).getOrElse(s"#${index + 1}")
      val where = s"workload '$name'"
      (for
        _ <- known(o, fields, where)
        n <- o("name").toRight("\"name\" is required").flatMap(j =>
          j.asString.toRight(s"\"name\" must be a string, was: ${short(j)}")
        )
        tasks <- int(o, "tasks", None)
        batch <- int(o, "batch", None)
        producers <- int(o, "producers", Some(2))
        slots <- int(o, "slots", Some(batch))
        buffer <- int(o, "buffer", Some(2 * batch))
        produce <- delay(o, "produce")
        consume <- delay(o, "consume")
        burst <- o("burst").traverse(b => burstOf(b))
        w <- Workload.validate(Workload(n, tasks, batch, producers, slots, buffer, produce, consume, burst))
          .left.map(_.stripPrefix(s"workload '$n': "))
      yield w).left.map(e => s"$where: $e")
    }

  private def burstOf(json: Json): Either[String, Burst] =
    json.asObject.toRight(
      s"\"burst\" must be an object like {\"batches\": 3, \"pause_ms\": 2000}, was: ${short(json)}"
    ).flatMap { o =>
      for
        _ <- known(o, Set("batches", "pause_ms"), "burst")
        b <- int(o, "batches", None).left.map("burst." + _)
        p <- long(o, "pause_ms", None).left.map("burst." + _)
      yield Burst(b, p)
    }

  private def delay(o: JsonObject, field: String): Either[String, Delay] =
    val example = "{\"fixed\": ms}, {\"uniform\": {...}}, {\"exponential\": {...}} or {\"pareto\": {...}}"
    o(field).toRight(s"\"$field\" is required ($example)").flatMap { j =>
      j.asObject.filter(
        _.size == 1
      ).toRight(s"\"$field\" must be one of $example, was: ${short(j)}").flatMap { d =>
        val (kind, params) = d.toList.head
        def args(allowed: Set[String]) =
          params.asObject.toRight(s"\"$field.$kind\" must be an object, was: ${short(params)}")
            .flatTap(p => known(p, allowed, s"$field.$kind"))
        val parsed: Either[String, Delay] = kind match
          case "fixed" => longOf(params, s"$field.fixed").map(Delay.Fixed(_))
          case "uniform" => args(Set("min", "max")).flatMap(p =>
              (long(p, "min", None), long(p, "max", None)).mapN(Delay.Uniform(_, _))
            )
          case "exponential" =>
            args(Set("mean", "min", "max")).flatMap { p =>
              for
                mean <- double(p, "mean")
                min <- long(p, "min", Some(0L))
                max <- long(p, "max", Some(math.max(min, math.round(mean * 1000))))
              yield Delay.Exponential(mean, min, max)
            }
          case "pareto" =>
            args(Set("min", "shape", "max")).flatMap { p =>
              for
                min <- long(p, "min", None)
                shape <- double(p, "shape")
                max <- long(p, "max", Some(min * 1000))
              yield Delay.Pareto(min, shape, max)
            }
          case other => Left(s"unknown distribution '$other' (known: fixed, uniform, exponential, pareto)")
        parsed.flatMap(Delay.validate).left.map(e => s"$field: $e")
      }
    }

  private def known(o: JsonObject, allowed: Set[String], where: String): Either[String, Unit] =
    o.keys.find(k => !allowed(k)).fold(Right(()))(k =>
      Left(s"unknown field '$k' in $where (known: ${allowed.toVector.sorted.mkString(", ")})")
    )

  private def int(o: JsonObject, field: String, default: Option[Int]): Either[String, Int] =
    o(field) match
      case None => default.toRight(s"\"$field\" is required")
      case Some(j) =>
        j.asNumber.flatMap(_.toInt).toRight(s"\"$field\" must be a whole number, was: ${short(j)}")

  private def long(o: JsonObject, field: String, default: Option[Long]): Either[String, Long] =
    o(field) match
      case None => default.toRight(s"\"$field\" is required")
      case Some(j) => longOf(j, field)

  private def longOf(j: Json, field: String): Either[String, Long] =
    j.asNumber.flatMap(
      _.toLong
    ).toRight(s"\"$field\" must be a whole number of milliseconds, was: ${short(j)}")

  private def double(o: JsonObject, field: String): Either[String, Double] =
    o(field).toRight(s"\"$field\" is required").flatMap(j =>
      j.asNumber.map(_.toDouble).toRight(s"\"$field\" must be a number, was: ${short(j)}")
    )

  private def short(j: Json): String =
    val s = j.noSpaces
    if s.length > 60 then s.take(57) + "..." else s
