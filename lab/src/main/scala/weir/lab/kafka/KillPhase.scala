package weir.lab.kafka

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*

import java.nio.file.{Files, Path}
import java.util.concurrent.ThreadLocalRandom
import scala.concurrent.duration.*

/**
 * The kill run of `./weir lab kafka`: `consumers` JVMs running weir's source on one group, each writing a
 * line per processed record, while one of them, at random, is SIGKILLed every `killEvery` (`maxKills`
 * times at most) and a new one started; the run ends once the group has committed every partition to its end. The broker's committed
 * offsets are sampled every 100 ms for the commit lag.
 */
object KillPhase:

  final case class Outcome(
      analysis: KillAnalysis.Result,
      kills: Int,
      consumersStarted: Int,
      seconds: Double
  ):
    /** Records per second, from the first start to the last record's first finish. */
    def perSecond: Double = analysis.records / seconds

  def run(
      broker: LabBroker,
      topic: String,
      partitions: Int,
      consumers: Int,
      killEvery: FiniteDuration,
      maxKills: Int,
      settings: ConsumerSettings,
      deadline: FiniteDuration,
      dir: Path
  ): IO[Outcome] =
    for
      ends <- broker.ends(topic, partitions)
      live <- Ref[IO].of(Vector.empty[(ConsumerJvm.Child, IO[Unit])])
      started <- Ref[IO].of(0)
      killed <- Ref[IO].of(Set.empty[Int])
      revoked <- Ref[IO].of(Map.empty[Int, Vector[Long]])
      samples <- Ref[IO].of(Vector.empty[KillAnalysis.Commits])
      file = (id: Int) => dir.resolve(s"consumer-$id.txt")
      onLine = (id: Int) =>
        (line: String) =>
          if line.startsWith("revoked ") then
            revoked.update(m => m.updated(id, m.getOrElse(id, Vector.empty) :+ line.drop(8).trim.toLong))
          else IO.unit
      spawn = started.getAndUpdate(_ + 1).flatMap(id =>
        ConsumerJvm.start(id, Approach.Weir, settings, 0, 0, 0, Some(file(id)), onLine(id)).allocated.flatMap(
          c =>
            live.update(_ :+ c)
        )
      )
      done = (c: Map[Int, Long]) => ends.forall((p, end) => c.getOrElse(p, 0L) >= end)
      sample =
        for
          before <- IO(Recorder.micros())
          c <- broker.committed(settings.group)
          after <- IO(Recorder.micros())
          _ <- samples.update(_ :+ KillAnalysis.Commits(before, after, c))
        yield done(c)
      // a kill and its replacement are not interrupted, so that every started consumer is in `live`
      killOne = live.get.flatMap { cs =>
        val alive = cs.filter(_._1.alive)
        IO.whenA(alive.nonEmpty) {
          val (victim, release) = alive(ThreadLocalRandom.current().nextInt(alive.size))
          IO.uncancelable(_ =>
            victim.kill *> killed.update(_ + victim.id) *> release *>
              live.update(_.filterNot(_._1 eq victim)) *>
              IO.realTimeInstant.flatMap(now =>
                IO.consoleForIO.errorln(s"  [lab] $now SIGKILL of consumer ${victim.id}")
              ) *> spawn
          )
        }
      }
      killer = (IO.sleep(killEvery) *> killOne).replicateA_(maxKills) *> IO.never
      _ <- Resource.make(IO.unit)(_ => live.get.flatMap(_.traverse_(_._2))).use { _ =>
        List.fill(consumers)(spawn).parSequence_ *>
          killer.background.surround(
            (IO.sleep(100.millis) *> sample).iterateUntil(identity).timeoutTo(
              deadline,
              samples.get.flatMap(s =>
                IO.raiseError(new IllegalStateException(
                  s"the kill run did not commit every partition to its end within $deadline: ends $ends, " +
                    s"committed ${s.lastOption.fold(Map.empty[Int, Long])(_.offsets)}"
                ))
              )
            )
          )
      }
      n <- started.get
      gone <- killed.get
      runs <- IO.blocking((0 until n).toVector.flatMap(id => KillAnalysis.read(id, file(id))))
      rev <- revoked.get
      commits <- samples.get
      analysis = KillAnalysis.analyse(ends, runs, gone, rev, commits)
      firstFinish = runs.groupMapReduce(r => (r.partition, r.offset))(_.finish)(math.min)
      from = runs.map(_.start).minOption.getOrElse(0L)
      to = firstFinish.values.maxOption.getOrElse(0L)
      _ <- IO.blocking((0 until n).foreach(id => Files.deleteIfExists(file(id)): Unit))
    yield Outcome(analysis, gone.size, n, (to - from) / 1e6)
