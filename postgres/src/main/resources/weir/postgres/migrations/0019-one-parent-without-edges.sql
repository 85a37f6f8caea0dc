-- weir: compatible-with-previous: yes
--   a column with a default, a function added, two replaced with the same signatures; no index or trigger
--   changes. Earlier releases' enqueues write an edge for every dependent, which these functions settle as
--   migration 18's did; the dependents this release enqueues without an edge are settled by them whoever
--   ends their parent.
--
-- weir-postgres schema: a dependent with one parent and no key, without an edge (issue 57; ADR 0060).
--
-- Migration 18 claims such a dependent straight from `waiting` once its parent's row is in `ready_parents`,
-- and found it, at its parent's end, through its edge in `dependencies`: the edge said which queue to name.
-- `tasks_waits_on` already holds what the edge held (the parent, the child's queue), so the enqueue of this
-- release writes no edge for a dependent with `waits_on` that needs its parent completed (one that runs on
-- any outcome keeps its edge, which says so), marks its parent `waited_on`, and `parents_ended` finds these
-- dependents through the index:
--   - for each parent marked `waited_on` that completed, the queues of its waiting one-parent dependents,
--     one index probe per queue (a skip over the index's `(waits_on, queue)` prefix: a fan-out's root with
--     19,998 dependents in one queue costs two probes, where deleting its edges wrote 19,998 rows), each
--     named in `ready_parents` and woken. A parent without the mark (its dependents all have several
--     parents, or keys) is not probed;
--   - for each parent that ended dead or cancelled, its one-parent dependents without an edge, cancelled
--     with the reason naming it, as the dependents its edges name; so are theirs, level by level. The
--     cascade takes the mark `dependents` off each task it cancels before removing it, so that the trigger
--     the removal fires does not settle that task's dependents again, nested, while this loop settles them.
-- A dependent an earlier release enqueued has both `waits_on` and an edge (with its queue), and its parent no
-- mark: the edge, consumed without counting it down, has its completed parent probed as a marked one's; a
-- parent that ended otherwise settles it through the edge (the index then leaves it to its edge).
--
-- The trigger passes the marked parents apart (`parents_ended(parents, waited, failed)`); the function of one
-- argument, which an enqueue calls for parents that ended before it, probes them all.

ALTER TABLE weir_schema.tasks ADD COLUMN waited_on boolean NOT NULL DEFAULT false;

-- The settle of migration 18, finding the one-parent dependents through `tasks_waits_on` instead of edges:
-- those of the parents among `p_waited` (marked `waited_on`), and of the parents of edges naming their
-- child's queue. `p_failed` says whether some parent ended other than completed, when the caller knows
-- (the trigger read their `finished` rows already); NULL, and each parent's row is read here.
CREATE FUNCTION weir_schema.parents_ended(p_parents bigint[], p_waited bigint[], p_failed boolean)
RETURNS void
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
  v_failed boolean;    -- some parent ended other than completed (its row in `finished` says so)
  v_completed bigint[]; -- the parents that completed and may have one-parent dependents
  v_met bigint[];      -- a child for each edge met: its parent completed, or the edge takes any outcome
  v_once boolean;      -- no child is in v_met twice
  v_more bigint[];
  v_level bigint[];    -- the children cancelled next, by id
  v_reasons text[];    -- why, in the order of v_level
  v_n bigint;
BEGIN
  IF p_failed IS NULL THEN
    -- each parent's end read once, by its key; a parent without a row completed
    SELECT EXISTS (SELECT 1 FROM weir_schema.finished AS f
                   WHERE f.id = ANY (ARRAY(SELECT unnest(p_parents))) AND f.state <> 'completed')
    INTO v_failed;
  ELSE
    v_failed := p_failed;
  END IF;

  IF NOT v_failed THEN
    -- every parent completed, so every edge out of them is met; an edge naming its child's queue is a
    -- one-parent dependent's, made claimable below with the others
    WITH ended AS (
      DELETE FROM weir_schema.dependencies AS d WHERE d.parent = ANY (ARRAY(SELECT unnest(p_parents)))
      RETURNING d.parent, d.child, d.child_queue
    )
    SELECT array_agg(e.child) FILTER (WHERE e.child_queue IS NULL),
           count(DISTINCT e.child) FILTER (WHERE e.child_queue IS NULL) = count(*) FILTER (WHERE e.child_queue IS NULL),
           array_agg(DISTINCT e.parent) FILTER (WHERE e.child_queue IS NOT NULL)
    INTO v_met, v_once, v_completed FROM ended AS e;
    -- (a parent twice names its queues twice: the insert below keeps one row)
    v_completed := p_waited || v_completed;
  ELSE
    WITH ended AS (
      DELETE FROM weir_schema.dependencies AS d WHERE d.parent = ANY (p_parents)
      RETURNING d.parent, d.child, d.any_outcome, d.child_queue
    ), judged AS (
      -- each parent's row read by its key: a join could read all of `finished` (the whole history) when its
      -- statistics are stale, planner settings or not
      SELECT e.parent, e.child, e.any_outcome, e.child_queue,
             coalesce((SELECT f.state::text FROM weir_schema.finished AS f WHERE f.id = e.parent), 'completed')
               AS outcome
      FROM ended AS e
    ), lone AS (
      -- the one-parent dependents without an edge of the parents that did not complete (the snapshot of
      -- this statement still shows the edges it deletes, so a dependent with one is left to it)
      SELECT t.id AS child, t.waits_on AS parent, f.state::text AS outcome
      FROM weir_schema.finished AS f
      JOIN weir_schema.tasks AS t
        ON t.waits_on = f.id AND t.parents_left > 0 AND t.waits_on IS NOT NULL
      WHERE f.id = ANY (p_parents) AND f.state <> 'completed'
        AND NOT EXISTS (SELECT 1 FROM weir_schema.dependencies AS d WHERE d.parent = t.waits_on AND d.child = t.id)
    ), doomed AS (
      SELECT DISTINCT ON (x.child) x.child,
             'task ' || x.parent || ', which it waits for, ended ' || x.outcome AS reason
      FROM (SELECT j.child, j.parent, j.outcome FROM judged AS j
            WHERE j.outcome <> 'completed' AND NOT j.any_outcome
            UNION ALL
            SELECT l.child, l.parent, l.outcome FROM lone AS l) AS x
      ORDER BY x.child, x.parent
    )
    SELECT (SELECT array_agg(j.child) FROM judged AS j
            WHERE (j.outcome = 'completed' AND j.child_queue IS NULL)
               OR (j.outcome <> 'completed' AND j.any_outcome)),
           (SELECT array_agg(d.child ORDER BY d.child) FROM doomed AS d),
           (SELECT array_agg(d.reason ORDER BY d.child) FROM doomed AS d),
           ARRAY(SELECT DISTINCT p.id FROM (
                   SELECT w.id FROM unnest(p_waited) AS w(id)
                   UNION ALL
                   SELECT j.parent FROM judged AS j WHERE j.child_queue IS NOT NULL) AS p(id)
                 WHERE NOT EXISTS (SELECT 1 FROM weir_schema.finished AS f
                                   WHERE f.id = p.id AND f.state <> 'completed'))
    INTO v_met, v_level, v_reasons, v_completed;
    v_once := false;
  END IF;

  IF cardinality(v_completed) > 0 THEN
    -- The queues of each completed parent's waiting one-parent dependents, read from `tasks_waits_on` one
    -- probe per queue (the first queue after the last one found), each named for the claims of its queue and
    -- woken at commit, as a release wakes it, the parent's row new or not (a dependent enqueued after its
    -- parent ended).
    WITH RECURSIVE found (parent, queue) AS (
      SELECT p.id,
             (SELECT t.queue FROM weir_schema.tasks AS t
              WHERE t.waits_on = p.id AND t.parents_left > 0 AND t.waits_on IS NOT NULL
              ORDER BY t.waits_on, t.queue LIMIT 1)
      FROM unnest(v_completed) AS p(id)
      UNION ALL
      SELECT f.parent,
             (SELECT t.queue FROM weir_schema.tasks AS t
              WHERE t.waits_on = f.parent AND t.queue > f.queue AND t.parents_left > 0 AND t.waits_on IS NOT NULL
              ORDER BY t.waits_on, t.queue LIMIT 1)
      FROM found AS f WHERE f.queue IS NOT NULL
    ), ready AS (
      INSERT INTO weir_schema.ready_parents (queue, parent)
      SELECT f.queue, f.parent FROM found AS f WHERE f.queue IS NOT NULL
      ON CONFLICT DO NOTHING
    )
    -- (a data-modifying CTE runs whether read or not)
    SELECT count(pg_notify('weir_schema.tasks', q.queue)) INTO v_n
    FROM (SELECT DISTINCT f.queue FROM found AS f WHERE f.queue IS NOT NULL) AS q;
  END IF;

  WHILE v_level IS NOT NULL LOOP
    -- Only a waiting task is cancelled: one that left its wait otherwise (an operator cancelled it, or
    -- retried it after a cancel) keeps its own edges for its own end. Its mark goes first, so that its
    -- removal's trigger leaves its dependents to this loop: settled there, nested, a chain's cascade would
    -- go as deep as the chain is long.
    PERFORM 1 FROM weir_schema.tasks AS t
    WHERE t.id = ANY (v_level) AND t.state = 'waiting'
    ORDER BY t.id FOR UPDATE;
    UPDATE weir_schema.tasks AS t SET dependents = false
    WHERE t.id = ANY (v_level) AND t.state = 'waiting' AND t.dependents;
    WITH lvl AS (
      SELECT l.id, l.reason FROM unnest(v_level, v_reasons) AS l(id, reason)
    ), victims AS (
      SELECT t.id FROM weir_schema.tasks AS t
      WHERE t.id = ANY (v_level) AND t.state = 'waiting'
      ORDER BY t.id FOR UPDATE
    ), out_edges AS (
      DELETE FROM weir_schema.dependencies AS d WHERE d.parent = ANY (ARRAY(SELECT v.id FROM victims AS v))
      RETURNING d.parent, d.child, d.any_outcome
    ), lone_out AS (
      SELECT t.id AS child, t.waits_on AS parent FROM weir_schema.tasks AS t
      WHERE t.waits_on = ANY (ARRAY(SELECT v.id FROM victims AS v)) AND t.parents_left > 0
        AND t.waits_on IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM weir_schema.dependencies AS d WHERE d.parent = t.waits_on AND d.child = t.id)
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
      SELECT DISTINCT ON (x.child) x.child, x.parent
      FROM (SELECT o.child, o.parent FROM out_edges AS o WHERE NOT o.any_outcome
            UNION ALL
            SELECT l.child, l.parent FROM lone_out AS l) AS x
      ORDER BY x.child, x.parent
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

-- The settle of parents the caller does not know more of (an enqueue's parents that ended before it): each
-- may have one-parent dependents.
CREATE OR REPLACE FUNCTION weir_schema.parents_ended(p_parents bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM weir_schema.parents_ended(p_parents, p_parents, NULL);
END
$$;

-- The trigger's function of migration 16, passing the parents marked `waited_on` apart, and whether one of
-- them ended other than completed, read with the `finished` rows it marks (a parent's row the statement did
-- not write is written here, completed).
CREATE OR REPLACE FUNCTION weir_schema.tasks_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_parents bigint[];  -- the removed tasks that others wait for, in id order
  v_waited bigint[];   -- those of them that dependents with one parent wait for (`waited_on`)
  v_members boolean;   -- some removed task is a batch's member
  v_kept boolean;      -- some removed task is kept with its workflow, parents and batch
  v_failed boolean;    -- some parent's `finished` row, which its statement wrote, says it did not complete
BEGIN
  SELECT array_agg(g.id ORDER BY g.id) FILTER (WHERE g.dependents),
         coalesce(array_agg(g.id) FILTER (WHERE g.dependents AND g.waited_on), '{}'),
         coalesce(bool_or(g.batch IS NOT NULL), false),
         coalesce(bool_or(g.workflow IS NOT NULL OR g.batch IS NOT NULL OR g.after IS NOT NULL OR g.dependents),
                  false)
  INTO v_parents, v_waited, v_members, v_kept
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
               g.errors, g.created_at, g.headers, g.lease_owner, g.workflow, g.after, g.batch, g.dependents
        FROM gone AS g
        WHERE g.workflow IS NOT NULL OR g.batch IS NOT NULL OR g.after IS NOT NULL OR g.dependents
      ), marked AS (
        UPDATE weir_schema.finished AS f SET workflow = k.workflow, after = k.after, batch = k.batch
        FROM kept AS k WHERE f.id = ANY (ARRAY(SELECT k2.id FROM kept AS k2)) AND f.id = k.id
        RETURNING f.id, f.state, k.dependents
      ), written AS (
        INSERT INTO weir_schema.finished (id, queue, payload, priority, state, attempt, max_attempts,
                                          ordering_key, unique_key, errors, created_at, headers, worker,
                                          workflow, after, batch)
        SELECT k.id, k.queue, k.payload, k.priority, 'completed', k.attempt, k.max_attempts, k.ordering_key,
               k.unique_key, k.errors, k.created_at, k.headers, k.lease_owner, k.workflow, k.after, k.batch
        FROM kept AS k
        WHERE NOT EXISTS (SELECT 1 FROM marked AS m WHERE m.id = k.id)
      )
      -- (a data-modifying CTE runs whether read or not.) Every parent is kept: its row was marked, or
      -- written here, completed
      SELECT coalesce(bool_or(m.state <> 'completed' AND m.dependents), false) FROM marked AS m
    $sql$ INTO v_failed;
  END IF;

  -- their dependents, settled together: a dependent many of them wait for counts them in one write
  IF v_parents IS NOT NULL THEN
    PERFORM weir_schema.parents_ended(v_parents, v_waited, v_failed);
  END IF;
  RETURN NULL;
END
$$;
