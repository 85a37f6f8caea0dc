-- weir: compatible-with-previous: yes
--   two tables, a nullable column, indexes, functions and triggers. Earlier releases never read or write
--   them; a member that an earlier worker finishes is counted by the triggers as a newer worker's is.
--
-- weir-postgres schema: batches with a callback (issue 57; ADR 0052).
--
-- A batch (`batches`) is a set of tasks, its members, and a callback task that becomes available once the
-- batch is closed and every member has ended. The callback is inserted when the batch is opened, `waiting`
-- with one parent left, the batch, like a dependent of migration 12 (so it is outside the claim index and
-- counted among its queue's waiting tasks); `batches.callback` names it from the start. A member is a task
-- whose `batch` names its batch, set when it is enqueued into it. Every end of a task removes its row from
-- `tasks`; the trigger `tasks_batch`, whose `WHEN` reads the removed row, notes a member's end for its
-- transaction (`batch_ends`), by its outcome (its row in `finished`, written by the same statement, says dead
-- or cancelled; a completion without `keepCompleted` leaves none, and counts as completed). A task in no
-- batch pays that test and nothing else. At the transaction's commit a deferred trigger hands the noted ends
-- to `batch_step`, batch by batch in the order of their ids.
--
-- `batch_step` changes a batch under its row's lock: new members (an enqueue into the batch), members' ends,
-- the close. Each such change of a batch waits for the others and reads the row they left, so whichever of
-- a close and the last member's end comes second (in two transactions or in one) finds the batch closed and
-- every member ended, sets `ended_at` once, and releases the callback (available, its queue woken at
-- commit). The counts never move again: a batch is closed for good, no member can be added, and each
-- member's row leaves `tasks` once (an operator's retry of a dead member puts it back outside the batch).
-- Workers whose transactions end members of several batches lock them in one order, and never deadlock on
-- them.
--
-- Workers of version 12 go on working: their claims and results are the same statements, and the members
-- they finish are counted by the trigger. The index is built here, reading the unfinished tasks once,
-- while claims and results wait.

ALTER TABLE weir_schema.tasks ADD COLUMN batch bigint;

CREATE TABLE weir_schema.batches (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  callback bigint NOT NULL,
  members bigint NOT NULL DEFAULT 0,
  completed bigint NOT NULL DEFAULT 0,
  dead bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  closed_at timestamptz,
  ended_at timestamptz,
  CONSTRAINT batches_counts CHECK (members >= 0 AND completed >= 0 AND dead >= 0 AND cancelled >= 0),
  CONSTRAINT batches_ended_closed CHECK (ended_at IS NULL OR closed_at IS NOT NULL)
);

-- a callback's job reads its batch by the callback's id
CREATE UNIQUE INDEX batches_callback ON weir_schema.batches (callback);

-- the ended batches, for their prune (after `Retention.batches`)
CREATE INDEX batches_ended ON weir_schema.batches (ended_at) WHERE ended_at IS NOT NULL;

-- a batch's unfinished members, for its cancel (a task in no batch has no entry)
CREATE INDEX tasks_in_batch ON weir_schema.tasks (batch) WHERE batch IS NOT NULL;

-- Changes the batch `p_batch` under its row's lock: `p_added` more members, members ended as completed,
-- dead and cancelled, and a close if `p_close` (a batch closed already stays as it was closed); members
-- added to a batch that was closed before fail the statement (SQLSTATE 55000). Once the
-- batch is closed and as many members have ended as it has, it ends, once: `ended_at` is set and the
-- callback, waiting for its batch as for one more parent, is released and its queue woken at commit. Returns
-- the batch as it is now; no row for an unknown batch.
CREATE FUNCTION weir_schema.batch_step(
  p_batch bigint,
  p_added bigint,
  p_completed bigint,
  p_dead bigint,
  p_cancelled bigint,
  p_close boolean
) RETURNS SETOF weir_schema.batches
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
DECLARE
  b weir_schema.batches;
  v_n bigint;
BEGIN
  -- the row locked, in its newest version: the change made by a transaction this one waited for is seen
  UPDATE weir_schema.batches AS x
  SET members = x.members + p_added,
      completed = x.completed + p_completed,
      dead = x.dead + p_dead,
      cancelled = x.cancelled + p_cancelled,
      closed_at = CASE WHEN p_close THEN coalesce(x.closed_at, now()) ELSE x.closed_at END
  WHERE x.id = p_batch
  RETURNING x.* INTO b;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  -- members enqueued into a batch closed meanwhile: the enqueue fails whole, its transaction with it, so
  -- that no member of a closed batch is ever committed
  IF p_added > 0 AND b.closed_at IS NOT NULL AND NOT p_close THEN
    RAISE EXCEPTION 'batch % is closed (since %): no member can be added to it', p_batch, b.closed_at
      USING ERRCODE = 'object_not_in_prerequisite_state',
            DETAIL = to_char(b.closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
  END IF;
  IF b.ended_at IS NULL AND b.closed_at IS NOT NULL AND b.completed + b.dead + b.cancelled = b.members THEN
    UPDATE weir_schema.batches AS x SET ended_at = now() WHERE x.id = p_batch RETURNING x.* INTO b;
    -- a callback that an operator cancelled, or retried since, is not waiting: it is left as it is
    WITH released AS (
      UPDATE weir_schema.tasks AS t
      SET parents_left = t.parents_left - 1,
          state = CASE WHEN t.parents_left > 1 THEN t.state ELSE 'available' END
      WHERE t.id = b.callback AND t.state = 'waiting'
      RETURNING t.queue, t.state
    )
    SELECT count(pg_notify('weir_schema.tasks', r.queue)) INTO v_n FROM released AS r WHERE r.state = 'available';
  END IF;
  RETURN NEXT b;
END
$$;

-- The members' ends of each transaction, by batch, until its commit applies them (a row per transaction and
-- batch; every row is gone by the time its transaction commits, so it need not survive a crash).
CREATE UNLOGGED TABLE weir_schema.batch_ends (
  xact bigint NOT NULL,
  batch bigint NOT NULL,
  completed bigint NOT NULL,
  dead bigint NOT NULL,
  cancelled bigint NOT NULL,
  PRIMARY KEY (xact, batch)
);

-- A member left `tasks`: its end is noted for its transaction's commit, by its outcome, which the statement
-- that removed it wrote in `finished` (none: a completion without keepCompleted). No batch is locked here:
-- the rows a statement removes come in no useful order, and two transactions that locked two batches each
-- in the order of their members would deadlock.
CREATE FUNCTION weir_schema.batch_member_left() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_state text;
BEGIN
  SELECT f.state::text INTO v_state FROM weir_schema.finished AS f WHERE f.id = OLD.id;
  INSERT INTO weir_schema.batch_ends AS e (xact, batch, completed, dead, cancelled)
  VALUES (txid_current(), OLD.batch,
          CASE WHEN v_state IS NULL OR v_state = 'completed' THEN 1 ELSE 0 END,
          CASE WHEN v_state = 'dead' THEN 1 ELSE 0 END,
          CASE WHEN v_state = 'cancelled' THEN 1 ELSE 0 END)
  ON CONFLICT (xact, batch) DO UPDATE
  SET completed = e.completed + excluded.completed, dead = e.dead + excluded.dead,
      cancelled = e.cancelled + excluded.cancelled;
  RETURN NULL;
END
$$;

-- At its commit, a transaction applies the ends it noted, batch by batch in the order of their ids, so that
-- any two transactions lock their batches in one order. The first of its deferred events does it all; the
-- others find nothing left.
CREATE FUNCTION weir_schema.batch_ends_applied() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  FOR r IN
    WITH gone AS (DELETE FROM weir_schema.batch_ends AS e WHERE e.xact = txid_current() RETURNING e.*)
    SELECT * FROM gone ORDER BY gone.batch
  LOOP
    PERFORM weir_schema.batch_step(r.batch, 0, r.completed, r.dead, r.cancelled, false);
  END LOOP;
  RETURN NULL;
END
$$;

-- fired at the end of the statement that removes the task, which has written its `finished` row by then
CREATE TRIGGER tasks_batch AFTER DELETE ON weir_schema.tasks
  FOR EACH ROW WHEN (OLD.batch IS NOT NULL) EXECUTE FUNCTION weir_schema.batch_member_left();

-- fired at commit, once per batch that the transaction's members' ends touched
CREATE CONSTRAINT TRIGGER batch_ends_at_commit AFTER INSERT ON weir_schema.batch_ends
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION weir_schema.batch_ends_applied();
