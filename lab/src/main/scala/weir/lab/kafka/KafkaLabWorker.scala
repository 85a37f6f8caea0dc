package weir.lab.kafka

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import weir.runtime.WeirApp

import java.nio.file.Paths
import scala.concurrent.duration.*

/**
 * One consumer JVM of `./weir lab kafka`, started by the lab as a child process. It runs one approach's
 * consumer on the handler (with a `warmup`, first for that many ms, untimed, reading the topic again on a
 * group of its own as often as the time allows, so that every approach is timed compiled rather than
 * interpreted) and says on standard output:
 *   - `started` once its consumer is running;
 *   - `revoked <micros>` each time weir's source has had partitions taken from it since the last line;
 *   - with a `target`, `result <records> <micros>` once it processed `target` records or `timeBox` ms
 *     passed: how many records, in how long from the first start. It then waits to be killed.
 *
 * It exits when its standard input ends: a lab that died leaves no consumer behind.
 *
 * args: approach bootstrap topic group sleepMillis limit maxInFlight pollMillis target timeBoxMillis warmupMillis report|-
 */
object KafkaLabWorker extends WeirApp:

  def run(args: List[String]): IO[ExitCode] =
    args match
      case List(
            approach,
            bootstrap,
            topic,
            group,
            sleep,
            limit,
            held,
            poll,
            target,
            timeBox,
            warmup,
            report
          ) =>
        Approach.named(approach) match
          case None => IO.consoleForIO.errorln(s"unknown approach '$approach'").as(ExitCode(2))
          case Some(a) =>
            val settings =
              ConsumerSettings(bootstrap, topic, group, sleep.toInt, limit.toInt, held.toInt, poll.toInt)
            val file = Option.when(report != "-")(Paths.get(report))
            val warm =
              IO.monotonic.flatMap(now => warmUp(a, settings, target.toLong, now + warmup.toLong.millis, 1))
            orphanWatch *> warm *> Recorder.resource(file, target.toLong).flatMap(r =>
              Consuming.resource(a, settings, r).map((r, _))
            ).use { (recorder, consuming) =>
              val result =
                if target.toLong <= 0 then IO.never
                else
                  recorder.await(timeBox.toLong).flatMap((n, micros) => IO.println(s"result $n $micros")) *>
                    IO.never
              IO.println("started") *> (watchRevocations(consuming), result).parTupled.void
            }.as(ExitCode.Success)
      case _ =>
        IO.consoleForIO.errorln(
          s"usage: KafkaLabWorker approach bootstrap topic group sleepMillis limit maxInFlight pollMillis target timeBoxMillis warmupMillis report|-, was: $args"
        ).as(ExitCode(2))

  /**
   * Untimed passes over the topic until `deadline`, each on a group of its own that reads it from the start:
   * a consumer that reads the whole topic before the warm-up is over reads it again, so that every approach
   * gets the whole warm-up, however fast it is.
   */
  private def warmUp(
      a: Approach,
      s: ConsumerSettings,
      target: Long,
      deadline: FiniteDuration,
      pass: Int
  ): IO[Unit] =
    IO.monotonic.flatMap { now =>
      val left = (deadline - now).toMillis
      if left <= 0 then IO.unit
      else
        Recorder.resource(None, target).flatMap(r =>
          Consuming.resource(a, s.copy(group = s"${s.group}-warmup-$pass"), r).as(r)
        ).use(_.await(left)) *> warmUp(a, s, target, deadline, pass + 1)
    }

  /** Prints a `revoked` line whenever the count of partitions taken from this consumer grows. */
  private def watchRevocations(c: Consuming): IO[Unit] =
    def loop(before: Long): IO[Unit] =
      IO.sleep(20.millis) *> c.revocations.flatMap { now =>
        IO.println(s"revoked ${Recorder.micros()}").whenA(now > before) *> loop(now)
      }
    c.revocations.flatMap(loop)

  /** Ends this JVM at once when the lab's end of the standard-input pipe closes. */
  private def orphanWatch: IO[Unit] =
    IO {
      Thread.ofPlatform().daemon(true).name("orphan-watch").start { () =>
        while System.in.read() >= 0 do ()
        Runtime.getRuntime.halt(3)
      }
    }.void
