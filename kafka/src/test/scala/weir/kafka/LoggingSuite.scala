package weir.kafka

import cats.effect.IO
import org.apache.kafka.common.serialization.StringDeserializer
import org.typelevel.log4cats.LoggerFactory
import weir.Pipeline
import weir.testing.RecordedLogs

import scala.concurrent.duration.*

/**
 * What a source logs through the user's `LoggerFactory`: its partitions assigned and revoked, as a second
 * consumer joins and leaves and as it leaves itself; a dead letter at DEBUG and their count on release;
 * nothing per record above DEBUG.
 */
class LoggingSuite extends KafkaTesting:

  private def consumerLines(logs: RecordedLogs) =
    logs.lines.map(_.filter(l => l.logger == "weir.kafka.consumer" && l.message.contains(": partitions ")))

  test("assignments and revokes are logged at INFO with their partitions, as consumers join and leave") {
    for
      topic <- TestBroker.topic(2)
      group = TestBroker.fresh("g")
      _ <- TestBroker.produce(topic, (0 until 100).map(i => (i % 2, s"k$i", s"$i")))
      logs <- RecordedLogs()
      s = settings(topic, group)
      both = s"$topic-0, $topic-1"
      _ <-
        running(s, logs = logs)(_ => IO.unit) { (_, seenA) =>
          outcomes(seenA, 100) *>
            eventually("the first consumer's assignment logged")(
              consumerLines(logs).map(ls => Option.when(ls.nonEmpty)(()))
            ) *>
            // the second consumer logs nowhere: only the first one's lines are recorded
            running(s)(_ => IO.unit) { (_, _) =>
              eventually("a partition revoked from the first consumer")(
                consumerLines(logs).map(ls => Option.when(ls.exists(_.message.contains("revoked")))(()))
              )
            } *>
            eventually("the partition assigned back once the second consumer left")(
              consumerLines(logs).map(ls => Option.when(ls.size >= 3)(()))
            )
        }
      lines <- logs.lines
      ours <- consumerLines(logs)
    yield
      def show = lines.map(l => s"${l.level} ${l.logger}: ${l.message}").mkString("\n")
      assertEquals(ours.map(_.level), Vector("INFO", "INFO", "INFO", "INFO"), show)
      assertEquals(ours(0).message, s"group '$group': partitions assigned: $both", show)
      assert(
        ours(1).message.startsWith(
          s"group '$group': partitions revoked, their finished records committed: $topic-"
        ),
        show
      )
      val moved = ours(1).message.split(": ").last
      assert(moved == s"$topic-0" || moved == s"$topic-1", show)
      assertEquals(ours(2).message, s"group '$group': partitions assigned: $moved", show)
      // on release the source leaves the group, revoking everything it holds
      assertEquals(
        ours(3).message,
        s"group '$group': partitions revoked, their finished records committed: $both",
        show
      )
      assert(ours.forall(_.context == Map("weir.group" -> group)), show)
      // the rest, if anything: a commit refused during a rebalance, as one streak
      assert(
        lines.diff(ours).forall(l =>
          l.logger == "weir.kafka.consumer" && l.message.contains("committing offsets")
        ),
        show
      )
  }

  test("a dead letter is logged at DEBUG, and the count of dead letters at WARN on release") {
    for
      topic <- TestBroker.topic(1)
      dlt <- TestBroker.topic(1, "dlt")
      group = TestBroker.fresh("g")
      _ <- TestBroker.produce(topic, List((0, "a", "1"), (0, "b", "poison"), (0, "c", "3")))
      logs <- RecordedLogs()
      s = settings(topic, group).copy(deadLetterTopic = Some(dlt))
      _ <- {
        given LoggerFactory[IO] = logs
        KafkaSource
          .start[IO, String, String, Unit](s, new StringDeserializer, poisonRejecting)(src =>
            Pipeline(src).process(_ => IO.unit)
          )
          .use(kafka =>
            kafka.outcomes.take(2).compile.drain *>
              eventually("the dead letter written", 30.seconds)(
                kafka.stats.map(st => Option.when(st.deadLettered == 1L)(()))
              )
          )
      }
      lines <- logs.lines.map(_.filter(_.logger == "weir.kafka.deadLetters"))
    yield
      assertEquals(lines.map(_.level), Vector("DEBUG", "WARN"))
      assertEquals(
        lines(0).message,
        s"group '$group': $topic-0@1 (undecodable) written to the dead-letter topic '$dlt'"
      )
      assertEquals(lines(0).error.map(_.getMessage), Some("not a value: poison"))
      assert(
        lines(1).message.startsWith(
          s"group '$group': 1 record(s) written to the dead-letter topic '$dlt' since the last summary"
        ),
        lines(1).message
      )
  }
