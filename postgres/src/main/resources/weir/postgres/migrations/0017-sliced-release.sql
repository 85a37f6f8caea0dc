-- weir: compatible-with-previous: yes
--   a new table and function; `parents_ended` and `claim_controlled` replaced with the same signatures. The
--   previous release's workers claim through `claim_controlled`, so they carry the releases on as well.
--
-- weir-postgres schema: a wide fan-out released in slices (issue 57; ADR 0057).
--
-- A parent's end released every dependent in the statement that ended it: for a fan-out of 20,000, one
-- update of 20,000 rows (each a new heap tuple and index entries), a third of a second during which none of
-- them could be claimed, written by the ending worker's one result stream. Now the statement that ends
-- completed parents consumes at most 1,000 edges of each, in id order of the dependents, and counts those
-- dependents down as before; a parent with edges left is named in `settling`. Every claim, before it
-- claims, asks whether `settling` names a parent and, if so, calls `settle_next`, which takes one such
-- parent (skipping those another claim holds), consumes its next 1,000 edges the same way, and forgets the
-- parent once none is left. So the first thousand dependents can be claimed as soon as the parent's end
-- commits, and the rest are released by the claims that follow, in other sessions, while those run. The
-- rescuer calls `settle_next` in each of its rounds too, so a schema whose queues are all paused or idle
-- still releases them.
--
-- What is released, and when it may start, is unchanged: an edge is consumed once (deleted, and its child
-- counted down by the transaction that deleted it), a dependent is released when its last edge is, and a
-- parent that ended other than completed still consumes all its edges at once, with its cascade. A parent
-- named in `settling` has ended completed (or without a row in `finished`, which is a completion).

CREATE TABLE weir_schema.settling (
  parent bigint PRIMARY KEY
);

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
  v_full bigint[];     -- the parents whose slice of edges was full, when every parent completed
BEGIN
  -- each parent's end read once, by its key; a parent without a row completed
  SELECT EXISTS (SELECT 1 FROM weir_schema.finished AS f
                 WHERE f.id = ANY (ARRAY(SELECT unnest(p_parents))) AND f.state <> 'completed')
  INTO v_failed;

  IF NOT v_failed THEN
    -- every parent completed, so every edge out of them is met: of each parent, its first 1,000 edges in
    -- key order now, and the rest by `settle_next`, which the claims call while `settling` names the parent
    -- The picked edges are deleted by their row addresses (a TID scan), not joined back: with statistics
    -- taken while `dependencies` was nearly empty, the planner joins the picked rows to a whole scan of the
    -- table's key, once per picked row. An edge another transaction deleted meanwhile is skipped, and no
    -- address can be reused while this statement's snapshot may still see the row that had it.
    WITH picked AS (
      SELECT k.parent, k.at
      FROM unnest(p_parents) AS p(id),
           LATERAL (SELECT x.parent, x.ctid AS at FROM weir_schema.dependencies AS x
                    WHERE x.parent = p.id ORDER BY x.child LIMIT 1000) AS k
    ), ended AS (
      DELETE FROM weir_schema.dependencies AS d WHERE d.ctid = ANY (ARRAY(SELECT k.at FROM picked AS k))
      RETURNING d.child
    )
    SELECT array_agg(e.child), count(DISTINCT e.child) = count(*),
           (SELECT array_agg(f.parent) FROM (SELECT k.parent FROM picked AS k GROUP BY k.parent
                                             HAVING count(*) >= 1000) AS f)
    INTO v_met, v_once, v_full FROM ended AS e;
    -- A parent whose slice was full may have edges left, even if this statement consumed none of that slice:
    -- a `settle_next` of the same parent may have consumed them and forgotten the parent before this
    -- statement's own edges (an enqueue naming the ended parent) were visible to it. A slice picked short
    -- held every edge of its parent this statement could see, and those it did not consume, another did.
    IF v_full IS NOT NULL THEN
      INSERT INTO weir_schema.settling (parent)
      SELECT p.id FROM unnest(v_full) AS p(id)
      WHERE EXISTS (SELECT 1 FROM weir_schema.dependencies AS d WHERE d.parent = p.id)
      ON CONFLICT DO NOTHING;
    END IF;
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

-- The next slice of the release of one parent named in `settling`: its next 1,000 edges consumed by
-- `parents_ended`, and the parent forgotten once it has no edge left. A parent another transaction is
-- settling is skipped; none left: nothing.
CREATE FUNCTION weir_schema.settle_next() RETURNS void
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
DECLARE
  v_parent bigint;
BEGIN
  SELECT s.parent INTO v_parent FROM weir_schema.settling AS s ORDER BY s.parent LIMIT 1 FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM weir_schema.parents_ended(ARRAY[v_parent]);
  DELETE FROM weir_schema.settling AS s
  WHERE s.parent = v_parent AND NOT EXISTS (SELECT 1 FROM weir_schema.dependencies AS d WHERE d.parent = v_parent);
END
$$;

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
  -- the next slice of a wide fan-out's release, before the claim, which can then take what it released
  IF EXISTS (SELECT 1 FROM weir_schema.settling) THEN
    PERFORM weir_schema.settle_next();
  END IF;
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
    WITH picked AS (
      SELECT t.id FROM weir_schema.tasks AS t
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
    ), claimed AS (
      UPDATE weir_schema.tasks AS t
      SET state = 'running', attempt = t.attempt + 1, lease_token = nextval('weir_schema.claim_tokens'),
          lease_owner = p_owner, lease_expires_at = now() + p_lease_millis * interval '1 millisecond'
      WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked AS p))
      RETURNING t.id, t.lease_token, t.attempt, t.max_attempts, t.priority, t.ordering_key, t.payload,
        t.created_at, t.run_at, t.headers
    )
    SELECT c.id, c.lease_token, c.attempt, c.max_attempts, c.priority, c.ordering_key, c.payload::text,
      (extract(epoch FROM c.created_at) * 1000000)::bigint, c.headers::text, NULL::boolean, NULL::bigint
    FROM claimed AS c ORDER BY c.priority, c.run_at, c.id;
    GET DIAGNOSTICS v_got = ROW_COUNT;
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
