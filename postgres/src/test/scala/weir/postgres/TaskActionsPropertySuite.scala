package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.implicits.*
import org.scalacheck.Gen
import org.scalacheck.rng.Seed
import weir.postgres.internal.Sql

/**
 * Random selections against a real server: whatever mix of ids a `…Many` call is given (waiting, keyed,
 * running, dead, cancelled, completed, a dead one whose unique key is held again, two dead ones sharing a
 * unique key, unknown ids, any of them repeated), it answers as the single calls would one after another,
 * leaves the tasks as they would, and records exactly one audit entry per id, in the ids' order, whose
 * outcome is its answer's. The same tasks are planted in two queues: the call acts on one, the single calls
 * on the other.
 */
class TaskActionsPropertySuite extends DbSuite:

  enum Kind:
    case Waiting, Keyed, Running, Dead, Cancelled, Completed, HeldKey, SharedKey, Unknown

  enum Act:
    case Cancel, Retry, Discard

  final case class Scenario(kinds: Vector[Kind], picks: Vector[Int], act: Act)

  val scenarios: Gen[Scenario] =
    for
      n <- Gen.choose(1, 9)
      kinds <- Gen.listOfN(n, Gen.oneOf(Kind.values.toSeq)).map(_.toVector)
      size <- Gen.choose(0, 14)
      picks <- Gen.listOfN(size, Gen.choose(0, n - 1)).map(_.toVector)
      act <- Gen.oneOf(Act.values.toSeq)
    yield Scenario(kinds, picks, act)

  /** Draws from fixed seeds, so a failure names a scenario that can be run again. */
  val drawn: Vector[Scenario] =
    Vector.tabulate(40)(i => scenarios(Gen.Parameters.default, Seed(20261129L + i))).flatten

  /**
   * Plants `kinds` in `queue`, one task each with its index as payload (a held key's holder: 100 + index),
   * and returns each one's id (an unknown one's: minus one less its index).
   */
  private def plant(db: Database[IO], queue: String, kinds: Vector[Kind], owner: Long): IO[Vector[Long]] =
    val sql = new Sql(db.schema)
    val tasks = TaskQueue[IO, Int](db, queue)
    def claimOne = sql.claim(queue, owner, 1, 600000).map(_.rows.head).transact(db.transactor)
    def finish(i: Int, kind: Kind): IO[Long] =
      val key = kind match
        case Kind.HeldKey => Some(s"held-$i")
        case Kind.SharedKey => Some("shared")
        case _ => None
      for
        _ <- tasks.enqueue(NewTask(i, maxAttempts = 1, uniqueKey = key))
        claimed <- claimOne
        _ <-
          if kind == Kind.Completed then
            sql.complete(Array(claimed.token), keep = true, keyed = false).transact(db.transactor).void
          else sql.fail(Array(claimed.token), Array(s"boom $i"), Array(0L)).transact(db.transactor).void
      yield claimed.id
    val finishing = Set(Kind.Dead, Kind.Completed, Kind.HeldKey, Kind.SharedKey)
    for
      finished <- kinds.zipWithIndex.collect { case (k, i) if finishing(k) => (k, i) }
        .traverse((k, i) => finish(i, k).map(i -> _))
      running <- kinds.zipWithIndex.collect { case (Kind.Running, i) => i }
        .traverse(i => tasks.enqueue(NewTask(i)) *> claimOne.map(c => i -> c.id))
      _ <- kinds.zipWithIndex.collect { case (Kind.HeldKey, i) => i }
        .traverse_(i => tasks.enqueue(NewTask(100 + i, uniqueKey = Some(s"held-$i"))))
      waiting <- kinds.zipWithIndex.collect {
        case (k, i) if k == Kind.Waiting || k == Kind.Keyed || k == Kind.Cancelled => (k, i)
      }.traverse((k, i) =>
        tasks.enqueue(NewTask(i, orderingKey = Option.when(k == Kind.Keyed)("k"))).map(e => i -> e.taskId)
      )
      ids = (finished ++ running ++ waiting).toMap
      _ <- kinds.zipWithIndex.collect { case (Kind.Cancelled, i) => ids(i) }
        .traverse_(TaskAdmin(db).tasks.cancel(_, "planted"))
    yield kinds.indices.toVector.map(i => ids.getOrElse(i, -1L - i))

  /** Every task of `queue`, by payload: its table, state, attempt, cancel request, head, error texts. */
  private def state(db: Database[IO], queue: String) =
    Rows.query[(String, String, String, Int, Option[String], Option[Boolean], String)](
      s"""SELECT payload::text, 'tasks', state::text, attempt, cancel_requested, head,
                (SELECT coalesce(string_agg(e->>'error', '|'), '') FROM jsonb_array_elements(errors) AS e)
         FROM ${db.schema("tasks")} WHERE queue = '$queue'
         UNION ALL
         SELECT payload::text, 'finished', state::text, attempt, NULL, NULL,
                (SELECT coalesce(string_agg(e->>'error', '|'), '') FROM jsonb_array_elements(errors) AS e)
         FROM ${db.schema("finished")} WHERE queue = '$queue'
         ORDER BY 1"""
    )

  /** The audit entries after `after`, oldest first: `(id, action, queue, task, outcome, detail)`. */
  private def entries(db: Database[IO], after: Long) =
    Rows.query[(Long, String, Option[String], Option[Long], String, Option[String])](
      s"SELECT id, action, queue, task, outcome, detail FROM ${db.schema("audit")} WHERE id > $after ORDER BY id"
    )

  withDb(s"a …Many call answers, changes and records as its single calls in order (${drawn.size} draws)") {
    db =>
      val admin = TaskAdmin(db, Operator("prop")).tasks
      // answers as text, so that the three actions' answers compare alike
      def many(act: Act, ids: Vector[Long]): IO[Vector[String]] = act match
        case Act.Cancel => admin.cancelMany(ids, "why").map(_.map(_.toString))
        case Act.Retry => admin.retryMany(ids).map(_.map(_.toString))
        case Act.Discard => admin.discardMany(ids).map(_.map(_.toString))
      def single(act: Act, id: Long): IO[String] = act match
        case Act.Cancel => admin.cancel(id, "why").map(_.toString)
        case Act.Retry => admin.retry(id).map(_.toString)
        case Act.Discard => admin.discard(id).map(_.toString)
      def outcomeOf(answer: String): Set[String] = answer match
        case "Cancelled" | "Retried" | "Discarded" => Set("done")
        case "Requested" => Set("requested")
        case "NotFound" => Set("not-found")
        case _ => Set("refused") // Finished(state), Refused(state), KeyHeld
      for
        owner <- new Sql(db.schema).register("prop", 600000).transact(db.transactor)
        _ <- drawn.zipWithIndex.traverse_ { (sc, n) =>
          val clue = s"draw $n: $sc"
          for
            inMany <- plant(db, s"m$n", sc.kinds, owner)
            inSingles <- plant(db, s"s$n", sc.kinds, owner)
            mark <- Rows.query[Long](s"SELECT coalesce(max(id), 0) FROM ${db.schema("audit")}").map(_.head)
            manyAnswers <- many(sc.act, sc.picks.map(inMany))
            afterMany <-
              Rows.query[Long](s"SELECT coalesce(max(id), 0) FROM ${db.schema("audit")}").map(_.head)
            singleAnswers <- sc.picks.traverse(i => single(sc.act, inSingles(i)))
            recorded <- entries(db, mark)
            manyState <- state(db, s"m$n")
            singlesState <- state(db, s"s$n")
          yield
            assertEquals(manyAnswers, singleAnswers, clue)
            assertEquals(manyState, singlesState, clue)
            val (byMany, bySingles) = recorded.partition(_._1 <= afterMany)
            def normalized(
                rows: Vector[(Long, String, Option[String], Option[Long], String, Option[String])],
                ids: Vector[Long]
            ) =
              rows.map((_, action, queue, task, outcome, detail) =>
                (action, queue.map(_.take(1)), task.map(t => ids.indexOf(t)), outcome, detail)
              )
            assertEquals(byMany.size, sc.picks.size, clue)
            assertEquals(normalized(byMany, inMany).map(_._3), sc.picks.map(i => Some(i)), clue)
            assertEquals(
              normalized(byMany, inMany).map(e => (e._1, e._3, e._4, e._5)),
              normalized(bySingles, inSingles).map(e => (e._1, e._3, e._4, e._5)),
              clue
            )
            assert(byMany.forall(_._3.forall(_ == s"m$n")), clue)
            manyAnswers.zip(byMany).foreach((answer, entry) =>
              assert(outcomeOf(answer)(entry._5), s"$clue: $answer recorded as ${entry._5}")
            )
        }
      yield ()
  }
