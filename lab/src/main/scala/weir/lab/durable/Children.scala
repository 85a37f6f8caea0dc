package weir.lab.durable

import cats.effect.{IO, Resource}

import java.io.{BufferedReader, InputStreamReader}

/** Worker JVMs of a lab run: started on this JVM's class path, killed with SIGKILL or stopped with SIGTERM. */
object Children:

  final case class Child(process: Process, workerId: Long)

  /** Starts a [[LabWorker]]; ready once it printed its worker id. Released: SIGKILL if still alive. */
  def start(args: List[String]): Resource[IO, Child] =
    val command = weir.lab.ChildCommand("weir.lab.durable.LabWorker", List("-Xmx512m"), args)
    Resource
      .make(IO.blocking(new ProcessBuilder(command*).redirectErrorStream(true).start()))(p =>
        IO.blocking(p.destroyForcibly().waitFor()).void
      )
      .evalMap(p => IO.blocking(Child(p, readId(p))))

  /** Reads until the child's `worker <id>` line; its other output is passed on to standard error. */
  private def readId(p: Process): Long =
    val reader = new BufferedReader(new InputStreamReader(p.getInputStream))
    val id = Iterator
      .continually(reader.readLine())
      .takeWhile(_ != null)
      .flatMap { line =>
        if line.startsWith("worker ") then Some(line.stripPrefix("worker ").trim.toLong)
        else
          System.err.println(s"  [worker] $line")
          None
      }
      .nextOption()
      .getOrElse(throw new IllegalStateException(
        s"a worker process exited (${p.waitFor()}) before it registered"
      ))
    // keep draining its output so that a chatty child never blocks on a full pipe; the pipe is closed
    // under the reader when the child is killed, which ends the draining like the end of its output
    Thread.ofVirtual().start(() =>
      try
        Iterator.continually(reader.readLine()).takeWhile(_ != null).foreach(l =>
          System.err.println(s"  [worker $id] $l")
        )
      catch case _: java.io.IOException => ()
    ): Unit
    id
