package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import org.scalacheck.Gen

import java.time.Instant

/**
 * Random tables of tasks in every [[TaskState]], planted with SQL as weir's statements leave them, for the
 * read model's properties: live tasks in `tasks` (a waiting one unmarked as its key's head, a scheduled one
 * due in ten years), finished ones in `finished`. Times are minutes before `now`, which lies in the past:
 * enqueue times in the hour before `now - 1 h`, finish times in the 5 minutes before `now`.
 */
object PlantedTasks:

  val now: Instant = Instant.parse("2026-06-01T12:00:00Z")

  /** A task as generated: live ones have no finish time. */
  final case class Row(
      id: Long,
      queue: String,
      state: TaskState,
      priority: Int,
      key: Option[String],
      payload: String,
      createdAt: Instant,
      finishedAt: Option[Instant]
  )

  def rows(max: Int): Gen[Vector[Row]] =
    for
      n <- Gen.choose(0, max)
      ids <- Gen.pick(n, 1L to 400L).map(_.toVector)
      rows <- Gen.sequence[Vector[Row], Row](ids.map { id =>
        for
          queue <- Gen.oneOf("a", "b")
          state <- Gen.oneOf(TaskState.values.toSeq)
          priority <- Gen.choose(0, 1)
          // running tasks go without a key: the schema allows one running task per key; a waiting one is
          // behind an earlier task of its key, so it has one
          key <- state match
            case TaskState.Running => Gen.const(None)
            case TaskState.Waiting => Gen.some(Gen.oneOf("k1", "k2"))
            case _ => Gen.option(Gen.oneOf("k1", "k2"))
          payload <- Gen.oneOf("x", "y", "X marks")
          created <- Gen.choose(0L, 50L).map(m => now.minusSeconds(3600 + m * 60))
          // few distinct finish times, so that ties are broken by id
          finished <- Gen.choose(0L, 5L).map(m => now.minusSeconds(m * 60))
        yield Row(id, queue, state, priority, key, payload, created, Option.when(!state.live)(finished))
      })
    yield rows

  def payload(r: Row): String = s"""{"v": "${r.payload}"}"""

  /** Empties both tables of `db`'s schema and plants `rs`. */
  def plant(db: Database[IO], rs: Vector[Row]): IO[Unit] =
    val tasks = db.schema("tasks")
    val finished = db.schema("finished")
    val inserts = rs.traverse_ { r =>
      if r.state.live then
        val runAt = if r.state == TaskState.Scheduled then now.plusSeconds(86400L * 365 * 10) else r.createdAt
        val running = r.state == TaskState.Running
        val stored = if running then TaskState.Running else TaskState.Available
        (Fragment.const(s"""INSERT INTO $tasks (id, queue, payload, priority, run_at, state, attempt,
            ordering_key, head, lease_owner, lease_expires_at, lease_token, created_at) VALUES (""") ++
          fr0"${r.id}, ${r.queue}, ${payload(r)}::jsonb, ${r.priority.toShort}, $runAt, " ++
          Fragment.const(s"'${stored.name}'") ++
          fr0", ${if running then 1 else 0}, ${r.key}, ${r.state != TaskState.Waiting}, ${Option.when(running)(1L)}, " ++
          fr0"${Option.when(running)(now.plusSeconds(3600))}, ${Option.when(running)(r.id)}, ${r.createdAt})")
          .update.run.void
      else
        (Fragment.const(s"""INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts,
            ordering_key, errors, created_at, finished_at) VALUES (""") ++
          fr0"${r.id}, ${r.queue}, ${payload(r)}::jsonb, ${r.priority.toShort}, " ++
          Fragment.const(s"'${r.state.name}'") ++
          fr0", 1, 3, ${r.key}, '[]'::jsonb, ${r.createdAt}, ${r.finishedAt})").update.run.void
    }
    (Fragment.const(s"TRUNCATE $tasks, $finished").update.run *> inserts).transact(TestDatabase.admin)

  /** What the task list must show for `q`: the matching tasks in the list's order. */
  def expected(rs: Vector[Row], q: TaskQuery): Vector[Row] =
    val byFinish = q.sort == TaskSort.Finished
    val matching = rs.filter { r =>
      val at = if byFinish then r.finishedAt else Some(r.createdAt)
      (!byFinish || r.finishedAt.isDefined) &&
      q.queue.forall(_ == r.queue) && q.state.forall(_ == r.state) && q.key.forall(k => r.key.contains(k)) &&
      q.priority.forall(_ == r.priority) &&
      q.text.forall(t => payload(r).toLowerCase.contains(t.toLowerCase)) &&
      q.from.forall(from => at.exists(!_.isBefore(from))) && q.to.forall(to => at.exists(_.isBefore(to)))
    }
    val oldestFirst =
      if byFinish then matching.sortBy(r => (r.finishedAt.get, r.id)) else matching.sortBy(_.id)
    if q.oldest then oldestFirst else oldestFirst.reverse
