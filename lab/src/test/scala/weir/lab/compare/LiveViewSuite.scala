package weir.lab
package compare

import munit.FunSuite
import weir.lab.compare.report.LiveView

class LiveViewSuite extends FunSuite:

  test("a P/C line shows produced and consumed as bars of the given width") {
    val line = LiveView.line("weir", produced = 500, consumed = 250, total = 1000, width = 8)
    assert(line.startsWith("weir "), line)
    assert(line.contains("P ████···· "), line)
    assert(line.contains("C ██······ "), line)
    assert(line.contains("  500/1000") && line.contains("  250/1000"), line)
  }

  test("bars never overflow, even past the total") {
    val line = LiveView.line("x", produced = 2000, consumed = 0, total = 1000, width = 4)
    assert(line.contains("P ████ "), line)
    assert(line.contains("C ···· "), line)
  }
