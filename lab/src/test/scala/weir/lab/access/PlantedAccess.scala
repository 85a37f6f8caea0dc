package weir.lab.access

import weir.Source

/**
 * A use of a `private[weir]` member of weir-core, planted for [[CoreAccessSuite]] to find: test code, which
 * the check of the modules does not read, so that it shows the check can fail.
 */
object PlantedAccess:
  def refusable(source: Source[?, ?]): Boolean = source.refusable
