-- weir: compatible-with-previous: yes
--   a function replaced with the same signature, and three row triggers on `tasks` replaced by one statement
--   trigger that does what they did; no table, column or index changes. Earlier releases' statements are
--   unchanged, and the tasks their workers end are settled, counted and kept by the new trigger as the old
--   ones did.
--
-- weir-postgres schema: a statement's ended tasks settled together (issue 57; ADR 0054).
--
-- Migrations 12 to 14 acted on each task's end in three row triggers on `tasks` (`tasks_dependents`,
-- `tasks_batch`, `tasks_kept`), each a function call per removed row that carries a dependent, a batch or a
-- workflow. A worker's batch of results ends many such tasks in one statement, and each of them paid for its
-- own calls, its own settle of `parents_ended` (with planner settings entered and left per call), and for a
-- fan-in, its own decrement of the one dependent's row, which an index's predicate names, so never in place.
--
-- One `AFTER DELETE ... FOR EACH STATEMENT` trigger, `tasks_ended`, now reads every row the statement
-- removed from its transition table (`gone`) and, for those rows only:
--   - notes the ends of batch members for the transaction's commit, one `batch_ends` row per batch, by
--     outcome (migration 13; the outcome is the `finished` row the same statement wrote, none: completed);
--   - keeps each task of a workflow or a batch (or with parents, or that others wait for) in `finished` with
--     its workflow, parents and batch (migration 14), in one upsert;
--   - settles the dependents of every removed task marked `dependents` in one call of `parents_ended`, which
--     decrements each dependent once by the number of its parents the statement ended, so a fan-in's row is
--     written once per statement, not once per parent.
-- A statement that removes no such row pays one pass over its transition table and nothing else; the rows
-- a cascade cancels are removed by `parents_ended`'s own statement, whose trigger keeps and counts them.
--
-- `parents_ended` keeps its meaning and its planner settings, now entered once per statement rather than
-- once per ended task: without them, statistics taken while the tables were small make the planner read
-- `finished` (the whole history) and `dependencies` by sequential scans for a statement's thousand parents
-- (ADR 0054). It also plans each statement for the arrays it is given and the tables as they are now
-- (`plan_cache_mode`): a plan cached in a worker's session while `finished` was nearly empty read a parent's
-- row through a whole index rather than by its key once the table had grown. JIT is off: the same
-- estimates made PostgreSQL compile statements that run in milliseconds. It now locks the dependents it counts down in id order itself (`ORDER BY ... FOR UPDATE`),
-- whatever plan finds them, so that two statements counting down the same dependents (two workers' batches
-- ending parents of the same fan-ins) wait for each other rather than deadlock.
--
-- Workers of version 14 go on working: their statements name nothing changed here.

DROP TRIGGER tasks_dependents ON weir_schema.tasks;
DROP TRIGGER tasks_batch ON weir_schema.tasks;
DROP TRIGGER tasks_kept ON weir_schema.tasks;
DROP FUNCTION weir_schema.task_left();
DROP FUNCTION weir_schema.batch_member_left();
DROP FUNCTION weir_schema.task_kept();

-- The end of the tasks `p_parents`, which have left `tasks`, for their dependents, as migration 12 wrote it,
-- planned as the claim is, with bitmap and sequential scans off (every statement reads rows by key): each
-- edge is consumed by the statement that deletes it, so a parent is settled once, whichever of the trigger
-- and an enqueue gets there; the edges out of the tasks a cascade cancels are consumed before their rows go,
-- so that the trigger their removal fires finds none left, and a cascade of any depth runs here, level by
-- level, never nested. The dependents that edges met are locked in id order, then each is counted down once
-- by the number of its edges met.
CREATE OR REPLACE FUNCTION weir_schema.parents_ended(p_parents bigint[]) RETURNS void
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_custom_plan
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
    -- Two statements that met edges of the same dependents (two workers' batches ending parents of one
    -- fan-in) take their locks in id order, so they wait for each other rather than deadlock; the second
    -- then reads the count the first left, in this statement's own snapshot, taken after the lock.
    PERFORM 1 FROM weir_schema.tasks AS t
    WHERE t.id = ANY (v_met) AND t.state = 'waiting'
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
-- batches; see the header. Each part reads only the rows that concern it, found in one pass first.
CREATE FUNCTION weir_schema.tasks_ended() RETURNS trigger
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
  -- here, completed, as `complete` with keepCompleted would have written it.
  IF v_kept THEN
    INSERT INTO weir_schema.finished AS f (id, queue, payload, priority, state, attempt, max_attempts,
                                           ordering_key, unique_key, errors, created_at, headers, worker,
                                           workflow, after, batch)
    SELECT g.id, g.queue, g.payload, g.priority, 'completed', g.attempt, g.max_attempts, g.ordering_key,
           g.unique_key, g.errors, g.created_at, g.headers, g.lease_owner, g.workflow, g.after, g.batch
    FROM gone AS g
    WHERE g.workflow IS NOT NULL OR g.batch IS NOT NULL OR g.after IS NOT NULL OR g.dependents
    ON CONFLICT (id) DO UPDATE SET workflow = excluded.workflow, after = excluded.after, batch = excluded.batch;
  END IF;

  -- their dependents, settled together: a dependent many of them wait for counts them in one write
  IF v_parents IS NOT NULL THEN
    PERFORM weir_schema.parents_ended(v_parents);
  END IF;
  RETURN NULL;
END
$$;

-- fired at the end of every statement that removes tasks, which has written their `finished` rows by then
CREATE TRIGGER tasks_ended AFTER DELETE ON weir_schema.tasks
  REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION weir_schema.tasks_ended();
