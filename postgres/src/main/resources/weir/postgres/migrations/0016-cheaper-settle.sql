-- weir: compatible-with-previous: yes
--   two functions replaced with the same signatures; no table, column, index or trigger changes. Earlier
--   releases' statements are unchanged, and the tasks their workers end are settled and kept by the new
--   functions as by the old ones.
--
-- weir-postgres schema: the settle of a statement's ended tasks, cheaper (issue 57; ADR 0056).
--
-- What `tasks_ended` (the statement trigger of migration 15) and `parents_ended` do is unchanged; how:
--   - `parents_ended` asks once whether any of its parents ended other than completed (their rows in
--     `finished`), instead of reading a parent's row once per edge (19,998 times for a fan-out's root). When
--     none did, every edge is met: the edges are deleted and their children counted down, and the statement
--     of migration 15, with its reasons and its cascade, runs only when one did;
--   - a dependent that the statement meets once (a fan-out's dependents; one parent of each ended) is
--     counted down by one in a single update that reads the rows through the primary key with `= ANY`,
--     which a btree walks in key order, so the rows are locked in id order without the separate lock pass
--     migration 15 took first; dependents met more than once (a fan-in's parents ended together) take that
--     pass and the counted update, as before;
--   - the arrays these statements take are passed as a subquery's value (`ARRAY(SELECT unnest(...))`), which
--     the planner reads as one parameter: with each statement planned anew (`plan_cache_mode`), a constant
--     array of 20,000 ids cost about 19 ms of estimates per statement, and the plan is the same index scan;
--   - `tasks_ended` keeps a workflow's tasks by updating the `finished` rows their statement wrote and
--     inserting the others, rather than by an upsert: only the transaction that removed a task writes its
--     row there, so no other insert can race with it, and a plain insert does without the speculative
--     insertion of `ON CONFLICT`. The statement is planned at each run, as the batch part's is.
--
-- Workers of version 15 go on working: their statements name nothing changed here.

CREATE OR REPLACE FUNCTION weir_schema.parents_ended(p_parents bigint[]) RETURNS void
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
  v_failed boolean;    -- some parent ended other than completed (its row in `finished` says so)
  v_met bigint[];      -- a child for each edge met: its parent completed, or the edge takes any outcome
  v_once boolean;      -- no child is in v_met twice
  v_more bigint[];
  v_level bigint[];    -- the children cancelled next, by id
  v_reasons text[];    -- why, in the order of v_level
  v_n bigint;
BEGIN
  -- each parent's end read once, by its key; a parent without a row completed
  SELECT EXISTS (SELECT 1 FROM weir_schema.finished AS f
                 WHERE f.id = ANY (ARRAY(SELECT unnest(p_parents))) AND f.state <> 'completed')
  INTO v_failed;

  IF NOT v_failed THEN
    -- every parent completed, so every edge out of them is met
    WITH ended AS (
      DELETE FROM weir_schema.dependencies AS d WHERE d.parent = ANY (ARRAY(SELECT unnest(p_parents)))
      RETURNING d.child
    )
    SELECT array_agg(e.child), count(DISTINCT e.child) = count(*) INTO v_met, v_once FROM ended AS e;
  ELSE
    WITH ended AS (
      DELETE FROM weir_schema.dependencies AS d WHERE d.parent = ANY (p_parents)
      RETURNING d.parent, d.child, d.any_outcome
    ), judged AS (
      -- each parent's row read by its key: a join could read all of `finished` (the whole history) when its
      -- statistics are stale, planner settings or not
      SELECT e.parent, e.child, e.any_outcome,
             coalesce((SELECT f.state::text FROM weir_schema.finished AS f WHERE f.id = e.parent), 'completed')
               AS outcome
      FROM ended AS e
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
    v_once := false;
  END IF;

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

  IF v_met IS NULL THEN
    RETURN;
  END IF;
  IF v_once THEN
    -- Each dependent met once, so counted down by one. The only path to the rows is the primary key, read
    -- with `= ANY` of the array, which a btree walks in key order: the rows are locked in id order, as the
    -- lock below takes them, so this statement and another counting down the same dependents wait for
    -- each other rather than deadlock; the second counts from the row the first committed.
    WITH released AS (
      UPDATE weir_schema.tasks AS t
      SET parents_left = t.parents_left - 1,
          state = CASE WHEN t.parents_left > 1 THEN t.state ELSE 'available' END
      WHERE t.id = ANY (ARRAY(SELECT unnest(v_met))) AND t.state = 'waiting'
      RETURNING t.queue, t.state
    )
    SELECT count(pg_notify('weir_schema.tasks', q.queue)) INTO v_n
    FROM (SELECT DISTINCT r.queue FROM released AS r WHERE r.state = 'available') AS q;
  ELSE
    -- Two statements that met edges of the same dependents (two workers' batches ending parents of one
    -- fan-in) take their locks in id order, so they wait for each other rather than deadlock; the second
    -- then reads the count the first left, in this statement's own snapshot, taken after the lock.
    PERFORM 1 FROM weir_schema.tasks AS t
    WHERE t.id = ANY (ARRAY(SELECT unnest(v_met))) AND t.state = 'waiting'
    ORDER BY t.id FOR UPDATE;
    WITH counts AS (
      SELECT c.id, count(*)::integer AS n FROM unnest(v_met) AS c(id) GROUP BY c.id
    ), released AS (
      UPDATE weir_schema.tasks AS t
      SET parents_left = t.parents_left - c.n,
          state = CASE WHEN t.parents_left - c.n > 0 THEN t.state ELSE 'available' END
      FROM counts AS c
      WHERE t.id = c.id AND t.state = 'waiting'
      RETURNING t.queue, t.state
    )
    -- the tasks released now are claimable: wake their queues, at commit, as an enqueue does
    SELECT count(pg_notify('weir_schema.tasks', q.queue)) INTO v_n
    FROM (SELECT DISTINCT r.queue FROM released AS r WHERE r.state = 'available') AS q;
  END IF;
END
$$;

-- What the end of the tasks a statement removed (its transition table `gone`) means for workflows and
-- batches, as migration 15 wrote it, but for the kept rows: the rows the statement wrote in `finished` get
-- their workflow, parents and batch by an update, and the others are inserted, completed, by a plain insert
-- (ADR 0056). Each part reads only the rows that concern it, found in one pass first.
CREATE OR REPLACE FUNCTION weir_schema.tasks_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_parents bigint[];  -- the removed tasks that others wait for, in id order
  v_members boolean;   -- some removed task is a batch's member
  v_kept boolean;      -- some removed task is kept with its workflow, parents and batch
BEGIN
  SELECT array_agg(g.id ORDER BY g.id) FILTER (WHERE g.dependents),
         coalesce(bool_or(g.batch IS NOT NULL), false),
         coalesce(bool_or(g.workflow IS NOT NULL OR g.batch IS NOT NULL OR g.after IS NOT NULL OR g.dependents),
                  false)
  INTO v_parents, v_members, v_kept
  FROM gone AS g;

  -- A member's end, by the outcome its statement wrote in `finished` (none: a completion without
  -- keepCompleted), noted for the commit, which applies the transaction's ends batch by batch in id order.
  -- No batch is locked here: the statements of two transactions would lock them in no common order.
  IF v_members THEN
    -- planned at each run (EXECUTE), for the size `finished` has now: a plan cached in the session while it
    -- was nearly empty could read each member's row through a whole index instead of by its key
    EXECUTE $sql$
      INSERT INTO weir_schema.batch_ends AS e (xact, batch, completed, dead, cancelled)
      SELECT txid_current(), m.batch,
             count(*) FILTER (WHERE m.state IS NULL OR m.state = 'completed'),
             count(*) FILTER (WHERE m.state = 'dead'),
             count(*) FILTER (WHERE m.state = 'cancelled')
      FROM (
        SELECT g.batch, (SELECT f.state FROM weir_schema.finished AS f WHERE f.id = g.id) AS state
        FROM gone AS g WHERE g.batch IS NOT NULL
      ) AS m
      GROUP BY m.batch
      ON CONFLICT (xact, batch) DO UPDATE
      SET completed = e.completed + excluded.completed, dead = e.dead + excluded.dead,
          cancelled = e.cancelled + excluded.cancelled
    $sql$;
  END IF;

  -- A task of a workflow or a batch keeps its workflow, parents and batch in the `finished` row its
  -- statement wrote; a statement that wrote none completed it without keeping it, and the row is written
  -- here, completed, as `complete` with keepCompleted would have written it. Only this transaction ends
  -- these tasks (it removed their rows), so no other writes their `finished` rows meanwhile: an update of
  -- the rows found and a plain insert of the others do what an upsert did, without its speculative insert.
  -- Planned at each run (EXECUTE), as above.
  IF v_kept THEN
    EXECUTE $sql$
      WITH kept AS (
        SELECT g.id, g.queue, g.payload, g.priority, g.attempt, g.max_attempts, g.ordering_key, g.unique_key,
               g.errors, g.created_at, g.headers, g.lease_owner, g.workflow, g.after, g.batch
        FROM gone AS g
        WHERE g.workflow IS NOT NULL OR g.batch IS NOT NULL OR g.after IS NOT NULL OR g.dependents
      ), marked AS (
        UPDATE weir_schema.finished AS f SET workflow = k.workflow, after = k.after, batch = k.batch
        FROM kept AS k WHERE f.id = ANY (ARRAY(SELECT k2.id FROM kept AS k2)) AND f.id = k.id
        RETURNING f.id
      )
      INSERT INTO weir_schema.finished (id, queue, payload, priority, state, attempt, max_attempts,
                                        ordering_key, unique_key, errors, created_at, headers, worker,
                                        workflow, after, batch)
      SELECT k.id, k.queue, k.payload, k.priority, 'completed', k.attempt, k.max_attempts, k.ordering_key,
             k.unique_key, k.errors, k.created_at, k.headers, k.lease_owner, k.workflow, k.after, k.batch
      FROM kept AS k
      WHERE NOT EXISTS (SELECT 1 FROM marked AS m WHERE m.id = k.id)
    $sql$;
  END IF;

  -- their dependents, settled together: a dependent many of them wait for counts them in one write
  IF v_parents IS NOT NULL THEN
    PERFORM weir_schema.parents_ended(v_parents);
  END IF;
  RETURN NULL;
END
$$;
