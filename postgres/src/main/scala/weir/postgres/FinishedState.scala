package weir.postgres

/** The states of a finished task. */
enum FinishedState(val name: String):
  case Completed extends FinishedState("completed")
  case Dead extends FinishedState("dead")
  case Cancelled extends FinishedState("cancelled")
