package weir.bench

import cats.effect.IO

/** The sequential baselines: `n` tasks one after another in one fiber (or thread), nothing in between. */
object Sequential:

  /** `task(0)`, then `task(1)`, … `task(n - 1)` in one fiber. */
  def io(n: Int, task: Int => IO[Unit]): IO[Unit] =
    def loop(i: Int): IO[Unit] = if i == n then IO.unit else task(i).flatMap(_ => loop(i + 1))
    loop(0)
