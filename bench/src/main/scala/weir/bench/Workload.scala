package weir.bench

/**
 * The two workloads every benchmark class runs, as constants so that JMH's `@OperationsPerInvocation`
 * can use them (JMH then reports time and allocation per task, not per run).
 *
 *   - no-op tasks: [[Tasks]] tasks at concurrency [[Concurrency]]; the score is ns per task;
 *   - 1 ms sleeps: [[SleepTasks]] tasks each waiting [[SleepMillis]] ms asynchronously, at concurrency
 *     [[SleepConcurrency]]; the score is the makespan of one run in ms. The ideal makespan is
 *     `SleepTasks / SleepConcurrency * SleepMillis` = [[IdealMakespanMillis]] ms, which is also what
 *     [[SequentialSleeps]] sleeps in a row take ideally (each class's sleep baseline).
 */
object Workload:
  final val Tasks = 100000
  final val Concurrency = 64

  /** Distinct keys in the per-key benchmarks: many more than workers, so keys rarely wait for each other. */
  final val Keys = 1024

  /**
   * The wide workload: as many workers as tasks ([[WideTasks]] no-op tasks at concurrency [[WideTasks]]), so
   * that what starting and ending a worker costs shows per task.
   */
  final val WideTasks = 10000

  final val SleepTasks = 10000
  final val SleepConcurrency = 1000
  final val SleepMillis = 1
  final val SequentialSleeps = 10
  final val IdealMakespanMillis = 10

  /** The JVM flags every forked benchmark JVM gets (see BUILD-NOTES pitfall 5). */
  final val JvmFlags = "--sun-misc-unsafe-memory-access=allow"
