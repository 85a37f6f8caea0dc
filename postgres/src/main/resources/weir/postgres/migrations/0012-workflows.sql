-- weir: compatible-with-previous: yes
--   a state that only tasks enqueued with parents take (earlier releases cannot enqueue them), columns
--   with defaults or nullable, a table, functions and a trigger; `enqueue` gains defaulted last parameters,
--   so calls written for version 11 mean what they meant. A parent that an earlier worker finishes releases
--   or cancels its dependents as a later worker's would: the trigger does it, not the worker.
--
-- weir-postgres schema: task dependencies and stored results (issue 57; ADR 0050).
--
-- A task enqueued with parents (`enqueue`'s `after` and `after_any_outcome`) is stored `waiting`, with
-- `parents_left` counting the parents that have not ended and `after` listing them. `waiting` is outside
-- the claim index's `state = 'available'`, so a claim never reads a waiting dependent and the claim path is
-- unchanged; `parents_left > 0` holds exactly for the waiting tasks (the partial index counts them per
-- queue, for the depths).
--
-- `dependencies` holds an edge (parent, child) per parent that has not ended yet. A parent's end consumes
-- its edges, once: whoever deletes an edge settles it. A task with edges is marked `dependents`, and its
-- removal from `tasks` (every end removes the row: completed, dead, cancelled, whoever writes it) fires the
-- trigger, which hands the task's id to `parents_ended`: each child of a parent that completed (or of any
-- parent, for an edge marked `any_outcome`) counts one parent less, and becomes `available` in the same
-- transaction once none is left, waking its queue; a child of a parent that ended dead or cancelled (its
-- row in `finished` says so; a completion without `keepCompleted` leaves none) moves to `finished`
-- cancelled, the parent named among its errors, and so do its own waiting dependents, level by level. The
-- trigger's `WHEN` reads the row being deleted, so the tasks without dependents, every task of a queue
-- that uses none, pay nothing but that test: no function call, no transition table.
--
-- An enqueue with parents locks its live parents and marks them (`dependents`), so that none can end
-- before its edges commit; the parents that have already ended are settled by `parents_ended` at once, as
-- if they ended then; an id found in neither table is refused (SQLSTATE 23503), as weir cannot tell a
-- task that never existed from one whose row is gone.
--
-- `finished.result` holds what a handler completed its task with (a worker's `startRecording`), as long as
-- the row is kept.
--
-- Workers of version 11 go on working: they never read the new columns, claim through functions left as
-- they were (which skip waiting tasks), and the tasks they finish settle their dependents through the
-- trigger. Their `TaskAdmin` cancel of a waiting dependent answers `Requested` and changes nothing. The
-- index is built here, reading the unfinished tasks once, while claims and results wait.

ALTER TYPE weir_schema.task_state ADD VALUE 'waiting' BEFORE 'running';

ALTER TABLE weir_schema.tasks
  ADD COLUMN after bigint[],
  ADD COLUMN parents_left integer NOT NULL DEFAULT 0,
  ADD COLUMN dependents boolean NOT NULL DEFAULT false;

ALTER TABLE weir_schema.finished ADD COLUMN result jsonb;

CREATE TABLE weir_schema.dependencies (
  parent bigint NOT NULL,
  child bigint NOT NULL,
  any_outcome boolean NOT NULL,
  PRIMARY KEY (parent, child)
);

-- the waiting dependents, by queue (`parents_left > 0` rather than the new state, which this transaction
-- cannot name yet)
CREATE INDEX tasks_waiting_for_parents ON weir_schema.tasks (queue) WHERE parents_left > 0;

-- The end of the tasks `p_parents`, which have left `tasks`, for their dependents. Planned, as the claim
-- is, with bitmap and sequential scans off: every statement reads rows by key, and the tables' statistics
-- are often stale (a burst of tasks arrives after the last analyze) and would make a scan of the whole
-- table look cheap. Each edge is consumed
-- by the statement that deletes it, so a parent is settled once, whichever of the trigger and an enqueue
-- gets there. The edges out of the tasks a cascade cancels are consumed before their rows go, so that the
-- trigger their removal fires finds none left: a cascade of any depth runs here, level by level, never
-- nested.
CREATE FUNCTION weir_schema.parents_ended(p_parents bigint[]) RETURNS void
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
DECLARE
  v_met bigint[];      -- a child for each edge met: its parent completed, or the edge takes any outcome
  v_more bigint[];
  v_level bigint[];    -- the children cancelled next, by id
  v_reasons text[];    -- why, in the order of v_level
  v_n bigint;
BEGIN
  WITH ended AS (
    DELETE FROM weir_schema.dependencies AS d WHERE d.parent = ANY (p_parents)
    RETURNING d.parent, d.child, d.any_outcome
  ), judged AS (
    SELECT e.parent, e.child, e.any_outcome, coalesce(f.state::text, 'completed') AS outcome
    FROM ended AS e LEFT JOIN weir_schema.finished AS f ON f.id = e.parent
  ), doomed AS (
    SELECT DISTINCT ON (j.child) j.child,
           'task ' || j.parent || ', which it waits for, ended ' || j.outcome AS reason
    FROM judged AS j WHERE j.outcome <> 'completed' AND NOT j.any_outcome
    ORDER BY j.child, j.parent
  )
  SELECT (SELECT array_agg(j.child) FROM judged AS j WHERE j.outcome = 'completed' OR j.any_outcome),
         (SELECT array_agg(d.child ORDER BY d.child) FROM doomed AS d),
         (SELECT array_agg(d.reason ORDER BY d.child) FROM doomed AS d)
  INTO v_met, v_level, v_reasons;

  WHILE v_level IS NOT NULL LOOP
    -- only a waiting task is cancelled: one that left its wait otherwise (an operator cancelled it, or
    -- retried it after a cancel) keeps its own edges for its own end
    WITH lvl AS (
      SELECT l.id, l.reason FROM unnest(v_level, v_reasons) AS l(id, reason)
    ), victims AS (
      SELECT t.id FROM weir_schema.tasks AS t
      WHERE t.id = ANY (v_level) AND t.state = 'waiting'
      ORDER BY t.id FOR UPDATE
    ), out_edges AS (
      DELETE FROM weir_schema.dependencies AS d WHERE d.parent = ANY (ARRAY(SELECT v.id FROM victims AS v))
      RETURNING d.parent, d.child, d.any_outcome
    ), gone AS (
      DELETE FROM weir_schema.tasks AS t WHERE t.id = ANY (ARRAY(SELECT v.id FROM victims AS v))
      RETURNING t.*
    ), moved AS (
      INSERT INTO weir_schema.finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key,
                                        unique_key, errors, created_at, headers)
      SELECT g.id, g.queue, g.payload, g.priority, 'cancelled', g.attempt, g.max_attempts, g.ordering_key,
             g.unique_key,
             g.errors || jsonb_build_array(jsonb_build_object('attempt', g.attempt, 'at', now(),
                                                              'error', 'cancelled: ' || l.reason)),
             g.created_at, g.headers
      FROM gone AS g JOIN lvl AS l ON l.id = g.id
      RETURNING 1
    ), next_heads AS (
      -- the next task of each key a cancelled task leaves becomes its head, as after any end
      UPDATE weir_schema.tasks AS n SET head = true
      WHERE NOT n.head AND n.id = ANY (ARRAY(
        SELECT (SELECT e.id FROM weir_schema.tasks AS e
                WHERE e.queue = g.queue AND e.ordering_key = g.ordering_key
                  AND NOT EXISTS (SELECT 1 FROM gone AS x WHERE x.id = e.id)
                ORDER BY e.id LIMIT 1)
        FROM gone AS g WHERE g.ordering_key IS NOT NULL))
      RETURNING n.queue
    ), next_level AS (
      SELECT DISTINCT ON (o.child) o.child, o.parent
      FROM out_edges AS o WHERE NOT o.any_outcome
      ORDER BY o.child, o.parent
    )
    SELECT (SELECT array_agg(x.child ORDER BY x.child) FROM next_level AS x),
           (SELECT array_agg('task ' || x.parent || ', which it waits for, was cancelled' ORDER BY x.child)
            FROM next_level AS x),
           (SELECT array_agg(o.child) FROM out_edges AS o WHERE o.any_outcome),
           (SELECT count(*) FROM moved)
             + (SELECT count(pg_notify('weir_schema.tasks', q.queue))
                FROM (SELECT DISTINCT h.queue FROM next_heads AS h) AS q)
    INTO v_level, v_reasons, v_more, v_n;
    v_met := v_met || v_more;
  END LOOP;

  IF v_met IS NOT NULL THEN
    WITH counts AS (
      SELECT c.id, count(*)::integer AS n FROM unnest(v_met) AS c(id) GROUP BY c.id
    ), released AS (
      UPDATE weir_schema.tasks AS t
      SET parents_left = t.parents_left - c.n,
          state = CASE WHEN t.parents_left - c.n > 0 THEN t.state ELSE 'available' END
      FROM counts AS c
      WHERE t.id = ANY (ARRAY(SELECT c2.id FROM counts AS c2 ORDER BY c2.id)) AND t.id = c.id
        AND t.state = 'waiting'
      RETURNING t.queue, t.state
    )
    -- the tasks released now are claimable: wake their queues, at commit, as an enqueue does
    SELECT count(pg_notify('weir_schema.tasks', q.queue)) INTO v_n
    FROM (SELECT DISTINCT r.queue FROM released AS r WHERE r.state = 'available') AS q;
  END IF;
END
$$;

CREATE FUNCTION weir_schema.task_left() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM weir_schema.parents_ended(ARRAY[OLD.id]);
  RETURN NULL;
END
$$;

-- fired at the end of the statement that removes the task, which has written its `finished` row by then
CREATE TRIGGER tasks_dependents AFTER DELETE ON weir_schema.tasks
  FOR EACH ROW WHEN (OLD.dependents) EXECUTE FUNCTION weir_schema.task_left();

-- New parameters make a new function beside the old one, and a call that both could take would be
-- ambiguous: the old one goes in the same transaction.
DROP FUNCTION weir_schema.enqueue(text, jsonb, integer, timestamptz, integer, text, text, jsonb);

CREATE FUNCTION weir_schema.enqueue(
  queue             text,
  payload           jsonb,
  priority          integer DEFAULT 0,
  run_at            timestamptz DEFAULT now(),
  max_attempts      integer DEFAULT 20,
  ordering_key      text DEFAULT NULL,
  unique_key        text DEFAULT NULL,
  headers           jsonb DEFAULT NULL,
  after             bigint[] DEFAULT NULL,
  after_any_outcome bigint[] DEFAULT NULL,
  OUT task_id       bigint,
  OUT inserted      boolean
) LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_after bigint[] := coalesce(enqueue.after, '{}') || coalesce(enqueue.after_any_outcome, '{}');
  v_live bigint[];
  v_ended bigint[];
  v_unknown bigint[];
  v_twice bigint;
BEGIN
  IF cardinality(v_after) > 0 THEN
    IF array_position(v_after, NULL) IS NOT NULL THEN
      RAISE EXCEPTION 'after and after_any_outcome must not hold NULL, was: %', v_after
        USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT a INTO v_twice FROM unnest(v_after) AS a GROUP BY a HAVING count(*) > 1 ORDER BY a LIMIT 1;
    IF v_twice IS NOT NULL THEN
      RAISE EXCEPTION 'a task waits for each parent once: task % is named twice in after and after_any_outcome', v_twice
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- the live parents are locked, so that none ends before this task's edges commit, and marked, so that
    -- its end then settles them (the trigger); a parent marked already is not written again
    WITH held AS (
      SELECT t.id, t.dependents FROM weir_schema.tasks AS t WHERE t.id = ANY (v_after) FOR KEY SHARE
    ), marked AS (
      UPDATE weir_schema.tasks AS t SET dependents = true
      WHERE t.id = ANY (ARRAY(SELECT h.id FROM held AS h WHERE NOT h.dependents))
      RETURNING t.id
    )
    SELECT coalesce(array_agg(h.id), '{}') INTO v_live FROM held AS h;
    -- a statement of its own, so that its snapshot sees the ends of the parents it waited for
    SELECT coalesce(array_agg(f.id), '{}') INTO v_ended
    FROM weir_schema.finished AS f WHERE f.id = ANY (v_after) AND f.id <> ALL (v_live);
    SELECT array_agg(a ORDER BY a) INTO v_unknown
    FROM unnest(v_after) AS a WHERE a <> ALL (v_live) AND a <> ALL (v_ended);
    IF v_unknown IS NOT NULL THEN
      RAISE EXCEPTION 'a task of queue % waits for unknown task(s) %: no task of this schema has the id, or its row is gone (completed without keepCompleted, or pruned)',
        quote_literal(enqueue.queue), array_to_string(v_unknown, ', ')
        USING ERRCODE = 'foreign_key_violation';
    END IF;
  END IF;
  LOOP
    INSERT INTO weir_schema.tasks AS t (queue, payload, priority, run_at, max_attempts, ordering_key, unique_key,
                                        head, headers, after, parents_left, state)
    VALUES (enqueue.queue, enqueue.payload, enqueue.priority::smallint, enqueue.run_at, enqueue.max_attempts,
            enqueue.ordering_key, enqueue.unique_key,
            enqueue.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM weir_schema.tasks AS e
              WHERE e.queue = enqueue.queue AND e.ordering_key = enqueue.ordering_key),
            nullif(enqueue.headers, '{}'::jsonb),
            nullif(v_after, '{}'), cardinality(v_after),
            CASE WHEN cardinality(v_after) > 0 THEN 'waiting' ELSE 'available' END::weir_schema.task_state)
    ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
    RETURNING t.id INTO task_id;
    IF task_id IS NOT NULL THEN
      inserted := true;
      IF cardinality(v_after) > 0 THEN
        INSERT INTO weir_schema.dependencies (parent, child, any_outcome)
        SELECT a, task_id, a = ANY (coalesce(enqueue.after_any_outcome, '{}')) FROM unnest(v_after) AS a;
        -- the parents that already ended count as if they ended now: this may release the task, or cancel it
        IF cardinality(v_ended) > 0 THEN
          PERFORM weir_schema.parents_ended(v_ended);
        END IF;
      ELSE
        -- delivered at commit, and folded with the transaction's other notifications of the queue
        PERFORM pg_notify('weir_schema.tasks', enqueue.queue);
      END IF;
      RETURN;
    END IF;
    -- the holder may finish between the conflict and this read: then insert again
    SELECT t.id INTO task_id FROM weir_schema.tasks AS t
      WHERE t.queue = enqueue.queue AND t.unique_key = enqueue.unique_key;
    IF task_id IS NOT NULL THEN
      inserted := false;
      RETURN;
    END IF;
  END LOOP;
END
$$;
