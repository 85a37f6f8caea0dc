package weir.kafka.guide

import org.apache.kafka.common.TopicPartition
import weir.kafka.{KafkaTesting, TestBroker}

import java.nio.file.{Files, Paths}

class KafkaGuideSuite extends KafkaTesting:

  private val root = Paths.get(sys.props.getOrElse("user.dir", ".")).resolve("..").normalize

  private def normalize(text: String): String =
    text.replace("\r\n", "\n").linesIterator.map(_.replaceAll("\\s+$", "")).mkString("\n")

  test("every scala block of docs/kafka.md is KafkaExample's code, verbatim") {
    val doc = Files.readString(root.resolve("docs/kafka.md"))
    val code =
      normalize(Files.readString(root.resolve("kafka/src/test/scala/weir/kafka/guide/KafkaExample.scala")))
    val blocks = "(?s)```scala\n(.*?)```".r.findAllMatchIn(doc).map(m => normalize(m.group(1)).strip).toVector
    assert(blocks.nonEmpty, "docs/kafka.md has no scala block")
    blocks.foreach(b => assert(code.contains(b), s"docs/kafka.md block not in KafkaExample.scala:\n$b"))
  }

  test("the example runs every record and commits the topic to its end") {
    for
      topic <- TestBroker.topic(2)
      _ <- TestBroker.produce(topic, (0 until 40).map(i => (i % 2, s"user-${i % 7}", s"email $i")))
      summary <- KafkaExample.run(
        TestBroker.bootstrap,
        topic,
        committedTo(s"$topic-senders", new TopicPartition(topic, 0), 20L) *>
          committedTo(s"$topic-senders", new TopicPartition(topic, 1), 20L)
      )
    yield assertEquals((summary.received, summary.succeeded), (40L, 40L))
  }
