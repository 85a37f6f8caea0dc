-- weir: compatible-with-previous: yes
--   a column and an index on `tasks`, a column on `dependencies`, a new table, and two functions replaced with
--   the same signatures. Earlier releases' enqueues leave the new columns empty, and their dependents are
--   released as before; their claims call `claim_controlled`, which now also takes the new kind of dependent;
--   their read models show such a dependent `waiting` until it is claimed (this release's show it available).
--
-- weir-postgres schema: a dependent with one parent, claimed straight from `waiting` (issue 57; ADR 0059).
--
-- A parent's completion released each of its dependents by rewriting its row `available`: a new version of
-- the row, entering the claim index and the workflow index, read again by the claim that rewrites it
-- `running`. For a dependent with exactly one parent and no ordering key, the enqueue now names that parent
-- in `waits_on` (and the child's queue on its edge), and the parent's completion writes one row, (queue,
-- parent), in `ready_parents`, instead of touching the dependents. A claim takes, beside the queue's
-- available tasks, the waiting tasks whose `waits_on` parent is in `ready_parents` for its queue (through
-- `tasks_waits_on`), and keeps the best of both by priority, due time and id: the row is written once,
-- `running`. Once a claim leaves none of a parent's dependents waiting in its queue, the parent's row goes.
--
-- A parent that ends dead or cancelled settles these dependents as before, through their edges (cancelled
-- unless `runsAnyway`, then released). A dependent with a key, or with several parents, is released as before.

ALTER TABLE weir_schema.tasks ADD COLUMN waits_on bigint;
-- the waiting tasks that a claim may take once their one parent completed; a claim sets `parents_left` to 0
CREATE INDEX tasks_waits_on ON weir_schema.tasks (waits_on, queue, priority, run_at, id)
  WHERE parents_left > 0 AND waits_on IS NOT NULL;
-- the completed parents whose dependents in `queue` a claim takes from `waiting`
CREATE TABLE weir_schema.ready_parents (queue text NOT NULL, parent bigint NOT NULL, PRIMARY KEY (queue, parent));
-- the queue of an edge's child that waits on its parent this way; NULL for the others
ALTER TABLE weir_schema.dependencies ADD COLUMN child_queue text;

-- The claim of migration 6, taking the dependents whose one parent completed beside the available tasks.
CREATE OR REPLACE FUNCTION weir_schema.claim_controlled(p_queue text, p_owner bigint, p_limit integer, p_lease_millis bigint)
RETURNS TABLE (
  id bigint, lease_token bigint, attempt integer, max_attempts integer, priority smallint,
  ordering_key text, payload text, created_micros bigint, headers text,
  limited boolean, held_back_millis bigint
)
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
  q weir_schema.queues%ROWTYPE;
  v_controlled boolean;
  v_allowed integer := p_limit;
  v_room integer;
  v_tokens double precision;
  v_clock timestamptz;
  v_got integer := 0;
  v_wait bigint;
BEGIN
  SELECT * INTO q FROM weir_schema.queues AS c WHERE c.name = p_queue;
  v_controlled := FOUND AND (q.paused OR q.max_running IS NOT NULL OR q.rate_per_second IS NOT NULL);
  IF v_controlled AND NOT q.paused THEN
    -- the claims of a limited queue take turns here, and read the controls again under the lock
    SELECT * INTO q FROM weir_schema.queues AS c WHERE c.name = p_queue FOR UPDATE;
  END IF;
  IF v_controlled AND q.paused THEN
    RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::integer, NULL::smallint, NULL::text,
      NULL::text, NULL::bigint, NULL::text, q.max_running IS NOT NULL, -1::bigint;
    RETURN;
  END IF;
  IF v_controlled THEN
    v_clock := clock_timestamp();
    IF q.rate_per_second IS NOT NULL THEN
      v_tokens := least(q.rate_burst::double precision,
        q.tokens + q.rate_per_second * greatest(0, extract(epoch FROM v_clock - q.tokens_at)));
      v_allowed := least(v_allowed, floor(v_tokens)::integer);
    END IF;
    IF q.max_running IS NOT NULL THEN
      SELECT greatest(0, q.max_running - count(*))::integer INTO v_room
      FROM weir_schema.tasks AS r WHERE r.queue = p_queue AND r.state = 'running';
      v_allowed := least(v_allowed, v_room);
    END IF;
  END IF;
  IF v_allowed > 0 THEN
    RETURN QUERY
    WITH avail AS (
      SELECT t.id, t.priority, t.run_at FROM weir_schema.tasks AS t
      WHERE t.queue = p_queue AND t.state = 'available' AND t.run_at <= now()
        AND (t.ordering_key IS NULL OR t.head)
        AND (t.ordering_key IS NULL OR (
          NOT EXISTS (
            SELECT 1 FROM weir_schema.tasks AS e
            WHERE e.queue = t.queue AND e.ordering_key = t.ordering_key AND e.id < t.id)
          AND NOT EXISTS (
            SELECT 1 FROM weir_schema.tasks AS r
            WHERE r.queue = t.queue AND r.ordering_key = t.ordering_key AND r.state = 'running')))
      ORDER BY t.priority, t.run_at, t.id
      LIMIT v_allowed
      FOR UPDATE SKIP LOCKED
    ), ready AS (
      -- the dependents whose one parent completed, taken from `waiting`; those locked but not kept (the
      -- best of both arms are) stay locked until this claim commits, and other claims skip them meanwhile
      SELECT w.id, w.priority, w.run_at FROM weir_schema.ready_parents AS r
      CROSS JOIN LATERAL (
        SELECT t.id, t.priority, t.run_at FROM weir_schema.tasks AS t
        WHERE t.waits_on = r.parent AND t.queue = r.queue AND t.parents_left > 0 AND t.state = 'waiting'
          AND t.run_at <= now()
        ORDER BY t.priority, t.run_at, t.id
        LIMIT v_allowed
        FOR UPDATE OF t SKIP LOCKED) AS w
      WHERE r.queue = p_queue
      LIMIT v_allowed
    ), picked AS (
      SELECT x.id FROM (SELECT * FROM avail UNION ALL SELECT * FROM ready) AS x
      ORDER BY x.priority, x.run_at, x.id LIMIT v_allowed
    ), claimed AS (
      UPDATE weir_schema.tasks AS t
      SET state = 'running', parents_left = 0, attempt = t.attempt + 1, lease_token = nextval('weir_schema.claim_tokens'),
          lease_owner = p_owner, lease_expires_at = now() + p_lease_millis * interval '1 millisecond'
      WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked AS p))
      RETURNING t.id, t.lease_token, t.attempt, t.max_attempts, t.priority, t.ordering_key, t.payload,
        t.created_at, t.run_at, t.headers
    )
    SELECT c.id, c.lease_token, c.attempt, c.max_attempts, c.priority, c.ordering_key, c.payload::text,
      (extract(epoch FROM c.created_at) * 1000000)::bigint, c.headers::text, NULL::boolean, NULL::bigint
    FROM claimed AS c ORDER BY c.priority, c.run_at, c.id;
    GET DIAGNOSTICS v_got = ROW_COUNT;
    IF v_got > 0 THEN
      -- a parent whose dependents in this queue are all claimed (or gone) leaves `ready_parents`: a statement
      -- of its own, which sees this claim's rows running. One that a concurrent claim still held waiting
      -- stays, and goes with a later claim of the queue
      -- (OFFSET 0 keeps the test a probe of `tasks_waits_on` per row of the queue, never a join reading the
      -- whole index)
      DELETE FROM weir_schema.ready_parents AS r
      WHERE r.queue = p_queue AND NOT EXISTS (
        SELECT 1 FROM weir_schema.tasks AS t
        WHERE t.waits_on = r.parent AND t.queue = r.queue AND t.parents_left > 0 OFFSET 0);
    END IF;
  END IF;
  IF NOT v_controlled THEN
    RETURN;
  END IF;
  IF q.rate_per_second IS NOT NULL THEN
    v_tokens := v_tokens - v_got;
    UPDATE weir_schema.queues AS c SET tokens = v_tokens, tokens_at = v_clock WHERE c.name = p_queue;
  END IF;
  -- held back: the controls allowed fewer tasks than asked, and the claim took all they allowed (a claim
  -- that took fewer ran out of tasks, and waits for work like any other)
  IF v_allowed >= p_limit OR v_got < v_allowed THEN
    v_wait := NULL;
  ELSIF q.max_running IS NOT NULL AND v_room <= v_allowed THEN
    v_wait := -1;
  ELSE
    -- the rate allowed the claim all its whole tokens: fewer than one is left
    v_wait := ceil((1 - v_tokens) / q.rate_per_second * 1000)::bigint;
  END IF;
  RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::integer, NULL::integer, NULL::smallint, NULL::text,
    NULL::text, NULL::bigint, NULL::text, q.max_running IS NOT NULL, v_wait;
END
$$;


-- The settle of migration 16, writing `ready_parents` for the dependents claimed from `waiting`.
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
      RETURNING d.parent, d.child, d.child_queue
    ), ready AS (
      -- the dependents a claim takes from `waiting`: their parent's row for their queue, none of theirs
      INSERT INTO weir_schema.ready_parents (queue, parent)
      SELECT DISTINCT e.child_queue, e.parent FROM ended AS e WHERE e.child_queue IS NOT NULL
      ON CONFLICT DO NOTHING
    )
    -- (a data-modifying CTE runs whether read or not.) The queues of those dependents are woken at commit,
    -- as a release wakes them, the parent's row new or not (a dependent enqueued after its parent ended)
    SELECT array_agg(e.child) FILTER (WHERE e.child_queue IS NULL),
           count(DISTINCT e.child) FILTER (WHERE e.child_queue IS NULL) = count(*) FILTER (WHERE e.child_queue IS NULL),
           (SELECT count(pg_notify('weir_schema.tasks', q.child_queue))
            FROM (SELECT DISTINCT x.child_queue FROM ended AS x WHERE x.child_queue IS NOT NULL) AS q)
    INTO v_met, v_once, v_n FROM ended AS e;
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

