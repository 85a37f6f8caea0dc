-- weir: compatible-with-previous: yes
--   two new functions, and the claim function replaced with the same signature and the same answers. Every
--   release's claim calls `claim_controlled`, and reads the dependents through the new functions from the
--   moment this commits; no table or index changes.
--
-- weir-postgres schema: the claim reads a completed parent's dependents through `tasks_waits_on`, whatever
-- the statistics say.
--
-- Migration 18's claim looks a completed parent's waiting dependents up twice: its arm of dependents takes
-- the best of them by priority, due time and id, and, once the claim has taken some, a probe asks whether
-- any is left, to drop the parent's row from `ready_parents`. `tasks_waits_on` (parent, queue, priority,
-- run-at, id) answers both from a parent's first entries. But on statistics that say `tasks` is empty (the
-- table analyzed while its queues were empty, then a burst enqueued), PostgreSQL costs every scan at about a
-- row, and `tasks_waiting_for_parents` (the queue alone, over every waiting task), the smaller index, looks
-- cheaper for both: each look-up then reads every waiting task of the queue, and the arm sorts them.
--
-- Each look-up is now a function of its own that turns sorts off: both ask for the dependents in the claim's
-- order (the probe asks for the first), which only `tasks_waits_on` yields without a sort. The setting is
-- scoped to these two look-ups (each a PL/pgSQL function, planned on its own); the rest of the claim plans
-- as before, sorts included.

-- A completed parent's dependents in `p_queue` that a claim may take now, at most `p_limit`, best first,
-- locked for the caller's transaction (those another claim holds are skipped).
CREATE FUNCTION weir_schema.ready_dependents(p_queue text, p_parent bigint, p_limit integer)
RETURNS TABLE (id bigint, priority smallint, run_at timestamptz)
LANGUAGE plpgsql
SET enable_sort = off
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT t.id, t.priority, t.run_at FROM weir_schema.tasks AS t
  WHERE t.waits_on = p_parent AND t.queue = p_queue AND t.parents_left > 0 AND t.state = 'waiting'
    AND t.run_at <= now()
  ORDER BY t.priority, t.run_at, t.id
  LIMIT p_limit
  FOR UPDATE OF t SKIP LOCKED;
END
$$;

-- Whether some dependent in `p_queue` still waits on `p_parent` this way, due or not, locked or not. (The
-- order makes the first entry of `tasks_waits_on` the answer; OFFSET 0 keeps the subquery, order included,
-- as written.)
CREATE FUNCTION weir_schema.dependents_wait(p_queue text, p_parent bigint) RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
BEGIN
  RETURN EXISTS (
    SELECT 1 FROM weir_schema.tasks AS t
    WHERE t.waits_on = p_parent AND t.queue = p_queue AND t.parents_left > 0
    ORDER BY t.priority, t.run_at, t.id
    LIMIT 1 OFFSET 0);
END
$$;

-- The claim of migration 18, its look-ups of dependents through the functions above.
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
      -- the dependents whose one parent completed, taken from `waiting` (`ready_dependents`); those locked
      -- but not kept (the best of both arms are) stay locked until this claim commits, and other claims skip
      -- them meanwhile
      SELECT w.id, w.priority, w.run_at FROM weir_schema.ready_parents AS r
      CROSS JOIN LATERAL weir_schema.ready_dependents(r.queue, r.parent, v_allowed) AS w
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
      DELETE FROM weir_schema.ready_parents AS r
      WHERE r.queue = p_queue AND NOT weir_schema.dependents_wait(r.queue, r.parent);
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
