package weir.lab
package compare

import munit.FunSuite
import weir.lab.compare.scenarios.*

class WorkloadFileSuite extends FunSuite:

  private def parse(json: String) = WorkloadFile.parse(json, "w.json")

  private def error(json: String): String = parse(json) match
    case Left(e) => e
    case Right(ws) => fail(s"expected an error, parsed $ws")

  private val full =
    """{"workloads": [
      |  {"name": "bursty", "tasks": 500, "batch": 50, "producers": 3, "slots": 20, "buffer": 60,
      |   "produce": {"uniform": {"min": 100, "max": 200}},
      |   "consume": {"pareto": {"min": 10, "shape": 1.5, "max": 5000}},
      |   "burst": {"batches": 4, "pause_ms": 2000}},
      |  {"name": "exp", "tasks": 100, "batch": 10,
      |   "produce": {"fixed": 5}, "consume": {"exponential": {"mean": 50}}}
      |]}""".stripMargin

  test("a full file: every field, and the defaults") {
    val ws = parse(full).fold(e => fail(e), identity)
    assertEquals(ws.map(_.name), Vector("bursty", "exp"))
    assertEquals(
      ws(0),
      Workload(
        "bursty",
        500,
        50,
        3,
        20,
        60,
        Delay.Uniform(100, 200),
        Delay.Pareto(10, 1.5, 5000),
        Some(Burst(4, 2000))
      )
    )
    // producers 2, slots = batch, buffer = 2 * batch; exponential min 0, max 1000 × mean
    assertEquals(
      ws(1),
      Workload("exp", 100, 10, 2, 10, 20, Delay.Fixed(5), Delay.Exponential(50.0, 0, 50000), None)
    )
  }

  test("a single workload object is a file too") {
    val one = """{"name": "one", "tasks": 10, "batch": 5, "produce": {"fixed": 1}, "consume": {"fixed": 2}}"""
    assertEquals(parse(one).map(_.map(_.tasks)), Right(Vector(10)))
  }

  test("errors name the file, the workload, the field and the bad value") {
    val base = """"name": "x", "batch": 10, "produce": {"fixed": 1}, "consume": {"fixed": 1}"""
    assertEquals(error(s"""{$base, "tasks": -5}"""), "w.json: workload 'x': tasks must be > 0, was: -5")
    assertEquals(
      error(s"""{$base, "tasks": "many"}"""),
      "w.json: workload 'x': \"tasks\" must be a whole number, was: \"many\""
    )
    assertEquals(error(s"""{$base}"""), "w.json: workload 'x': \"tasks\" is required")
    assertEquals(
      error(s"""{$base, "tasks": 10, "slot": 3}"""),
      "w.json: workload 'x': unknown field 'slot' in workload 'x' (known: batch, buffer, burst, consume, name, produce, producers, slots, tasks)"
    )
    assertEquals(
      error(s"""{$base, "tasks": 10, "producers": 5}"""),
      "w.json: workload 'x': producers must be <= the number of batches (1), was: 5"
    )
  }

  test("delay errors: unknown kind, bad bounds, bad shape") {
    val base = """"name": "d", "tasks": 10, "batch": 5, "produce": {"fixed": 1}"""
    assert(error(
      s"""{$base, "consume": {"normal": {"mean": 1}}}"""
    ).endsWith("unknown distribution 'normal' (known: fixed, uniform, exponential, pareto)"))
    assertEquals(
      error(s"""{$base, "consume": {"uniform": {"min": 100, "max": 10}}}"""),
      "w.json: workload 'd': consume: uniform max must be >= min (100), was: 10"
    )
    assertEquals(
      error(s"""{$base, "consume": {"pareto": {"min": 10, "shape": 0}}}"""),
      "w.json: workload 'd': consume: pareto shape must be > 0, was: 0.0"
    )
    assertEquals(
      error(s"""{$base, "consume": {"fixed": -1}}"""),
      "w.json: workload 'd': consume: fixed delay must be >= 0 ms, was: -1"
    )
    assert(error(s"""{$base, "consume": 5}""").contains("\"consume\" must be one of"))
  }

  test("file-level errors: not JSON, empty list, duplicate names, unreadable file") {
    assert(error("{nope").startsWith("w.json: not valid JSON"))
    assertEquals(error("""{"workloads": []}"""), "w.json: \"workloads\" must not be empty")
    val one = """{"name": "a", "tasks": 10, "batch": 5, "produce": {"fixed": 1}, "consume": {"fixed": 2}}"""
    assertEquals(
      error(s"""{"workloads": [$one, $one]}"""),
      "w.json: workload name 'a' is used more than once"
    )
    assert(WorkloadFile.load(
      java.nio.file.Paths.get("/nonexistent/w.json")
    ).left.exists(_.startsWith("cannot read workload file")))
  }

  test("the example file in docs parses") {
    val path =
      java.nio.file.Paths.get(sys.props.getOrElse(
        "user.dir",
        "."
      )).resolve("../docs/lab/compare-workloads.json")
    assert(WorkloadFile.load(path).isRight, WorkloadFile.load(path).toString)
  }
