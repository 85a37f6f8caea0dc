package weir.lab.durable

import cats.effect.{IO, Ref, Resource}
import cats.effect.std.Supervisor
import cats.syntax.all.*
import doobie.*
import weir.postgres.*

import java.util.concurrent.ThreadLocalRandom
import scala.concurrent.duration.*

/**
 * Worker JVMs ([[LabWorker]]) under fire, for the kill run and the workflow run of `./weir lab durable`: a
 * random one SIGKILLed at random moments around every `killEvery` and another started in its place, and the
 * server restarted every `restartEvery`, both for as long as the run says it is `active`.
 */
object Chaos:

  /** The kills and restarts made, and, per killed worker, when the server was seen to free its session lock. */
  final case class Record(
      kills: Vector[KillPhase.Kill],
      restarts: Vector[KillPhase.Restart],
      lockFreed: Map[Long, Double]
  )

  /** How a run's workers end once its body has returned. */
  enum End:
    /** They stop by themselves (`stopWhenEmpty`): the run waits for each to exit. */
    case OnTheirOwn

    /** They are told to stop (SIGTERM: each drains and deregisters), then waited for. */
    case Terminated

  /**
   * Starts `workers` worker JVMs with `args`, all at once, then runs `body` while a killer and a restarter
   * (with `restartEvery`: its period and the server's restart) work: each first waits for the first worker's
   * start (on a loaded machine one JVM may come up seconds after the other, which meanwhile works through the
   * whole backlog), then naps, acts while `active` says so, and ends at the first nap after which it does
   * not. Once `body` has returned, they are stopped, the workers ended as `end` says, and the watch of each
   * kill ([[KillWatch]]) awaited.
   */
  def run[A](
      lab: LabDatabase,
      db: Database[IO],
      args: List[String],
      workers: Int,
      killEvery: Option[FiniteDuration],
      restartEvery: Option[(FiniteDuration, IO[Unit])],
      deadAfter: FiniteDuration,
      active: IO[Boolean],
      end: End
  )(body: IO[A]): IO[(A, Record)] =
    val clock =
      Fragment.const("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8").query[Double].unique
    for
      kills <- Ref[IO].of(Vector.empty[KillPhase.Kill])
      restarts <- Ref[IO].of(Vector.empty[KillPhase.Restart])
      freed <- Ref[IO].of(Map.empty[Long, Double])
      live <- Ref[IO].of(Vector.empty[(Children.Child, IO[Unit])])
      firstUp <- IO.deferred[Unit]
      spawn = Children.start(args).allocated.flatMap(c => live.update(_ :+ c) *> firstUp.complete(()).void)
      // each kill's watch (see `KillWatch`) outlives the kill; the run waits for the watches before it returns
      killer = (watchers: Supervisor[IO]) =>
        killEvery.fold(IO.unit) { every =>
          def loop: IO[Unit] =
            IO(ThreadLocalRandom.current().nextLong(every.toMillis / 2, every.toMillis * 3 / 2 + 1)).flatMap(
              ms => IO.sleep(ms.millis)
            ) *> active.flatMap { go =>
              if !go then IO.unit
              else
                live.get.flatMap { cs =>
                  val alive = cs.filter(_._1.process.isAlive)
                  if alive.isEmpty then loop
                  else
                    val (victim, release) = alive(ThreadLocalRandom.current().nextInt(alive.size))
                    // the kill's time is read before the signal, so a rescue is never timed short; a kill and
                    // its replacement are not interrupted, so that every started child is in `live`
                    // what the other workers see of the victim: whether its session holds its lock (then its
                    // death is seen within a heartbeat), and how many others are alive to rescue its tasks
                    IO.uncancelable(_ =>
                      Retrying("the workers' sessions")(TaskAdmin(db).overview.workers).flatMap { ws =>
                        val held = ws.exists(w => w.id == victim.workerId && w.sessionHeld)
                        val others = ws.count(w => w.id != victim.workerId && w.sessionHeld)
                        lab.read("the clock")(clock).flatMap(at =>
                          IO.blocking(victim.process.destroyForcibly().waitFor()) *>
                            kills.update(_ :+ KillPhase.Kill(victim.workerId, at, held, others)) *>
                            watchers.supervise(
                              KillWatch.follow(lab, victim.workerId, at, deadAfter * 3).flatMap(
                                _.traverse_(ms => freed.update(_ + (victim.workerId -> ms)))
                              )
                            ) *>
                            IO.realTimeInstant.flatMap(now =>
                              IO.consoleForIO.errorln(s"  [lab] $now SIGKILL of worker ${victim.workerId}")
                            )
                        )
                      } *> release *> live.update(_.filterNot(_._1 eq victim)) *> spawn
                    ) *> loop
                }
            }
          firstUp.get *> loop
        }
      // a restart every `every` while the run is active; the restart itself is never interrupted (see LabDatabase)
      restarter = restartEvery.fold(IO.unit) { (every, restart) =>
        def loop: IO[Unit] =
          IO.sleep(every) *> active.flatMap { go =>
            if !go then IO.unit
            else
              for
                down <- IO.realTime
                _ <- restart
                up <- IO.realTime
                _ <- restarts.update(_ :+ KillPhase.Restart(down.toMillis.toDouble, up.toMillis.toDouble))
                _ <- IO.realTimeInstant.flatMap(now =>
                  IO.consoleForIO.errorln(s"  [lab] $now server restarted (down ${(up - down).toMillis} ms)")
                )
                _ <- loop
              yield ()
          }
        firstUp.get *> loop
      }
      stop = live.get.flatMap(_.traverse_(c => IO.blocking(c._1.process.destroy())))
      result <-
        (Supervisor[IO](await = true), Resource.make(IO.unit)(_ => live.get.flatMap(_.traverse_(_._2))))
          .tupled.use { (watchers, _) =>
            // the killer and the restarter are stopped as soon as the body returns, rather than after their
            // next nap; the first workers start together: one started after another would find its elder
            // already working through the backlog on both cores, and take seconds to come up
            (killer(watchers), restarter).parTupled.background.surround(
              List.fill(workers)(spawn).parSequence_ *> body
            ) <*
              stop.whenA(end == End.Terminated) <*
              live.get.flatMap(_.traverse_(c => IO.interruptible(c._1.process.waitFor()).void))
          }
      record <- (kills.get, restarts.get, freed.get).mapN(Record.apply)
    yield (result, record)
