package weir

/**
 * Settings that do not hold, with every bad field and its value: `invalid WorkerConfig: claimBatch must be
 * > 0, was: 0; lease must be longer than two heartbeats (2 seconds), was: 1 second`.
 *
 * No settings record throws from its constructor or its `copy`: a record says what is wrong with it in its
 * `errors` (empty when it is valid), and whatever uses it ([[Pipeline.start]] and the runs built on it,
 * `Database.connect`, `DurableWorker.start`, `KafkaSource.start`, the console's routes) fails in its effect
 * with this error, naming all of them at once, as ciris accumulates configuration errors. [[Validation]]
 * builds such lists.
 *
 * @param settings what was checked (`Pipeline`, `WorkerConfig`, `KafkaSettings`…)
 * @param errors   each bad field, with its value; never empty
 */
final class InvalidSettings(val settings: String, val errors: List[String])
    extends IllegalArgumentException(s"invalid $settings: ${errors.mkString("; ")}")
