-- weir: compatible-with-previous: yes
--   a new table and function; the claim functions of versions 4 and 5 keep their
--   signatures and now obey the controls.
--
-- weir-postgres schema, version 6: controls of a queue that every worker obeys, stored here and enforced by
-- the claim itself: paused, a limit on the tasks running at once, a limit on the claims per second.
--
-- A queue has a row once a worker has served it or an operator has set a control; a queue without a row,
-- or whose row sets no control, is claimed as before, at the cost of one primary-key read. A claim of a
-- queue with a limit locks the queue's row for the rest of its transaction, so the claims of that queue
-- take turns: each one counts the running tasks (and spends the rate's tokens) after the previous one has
-- committed, which is what keeps the limit exact under any number of concurrent claimers. A task counts
-- as running from its claim until its finish or rescue, wherever it waits meanwhile; so a rescue, a
-- restart or a dead worker never lets the count fall below what may still run.
--
-- The rate is a token bucket in the row: `tokens` as of `tokens_at`, refilled at `rate_per_second` up to
-- `rate_burst`, one spent per task claimed, read and written by the claim under the row's lock with the
-- server's clock (`clock_timestamp()`: a claim that waited for the lock must not refill from the start of
-- its statement).
--
-- Workers of version 5 keep running while this is applied: `claim_with_headers` and version 4's `claim`
-- now go through the same controls, so they obey them too; only their idle waits do not learn a limit's
-- or a rate's timing (they poll).

CREATE TABLE weir_schema.queues (
  name            text PRIMARY KEY,
  paused          boolean NOT NULL DEFAULT false,
  max_running     integer,
  rate_per_second double precision,
  rate_burst      integer,
  tokens          double precision NOT NULL DEFAULT 0,
  tokens_at       timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT queues_name_not_empty CHECK (name <> ''),
  CONSTRAINT queues_max_running_positive CHECK (max_running IS NULL OR max_running > 0),
  -- 'NaN' sorts above every number in PostgreSQL, so `< 'Infinity'` refuses it as well as infinity
  CONSTRAINT queues_rate_valid CHECK (
    (rate_per_second IS NULL) = (rate_burst IS NULL)
    AND (rate_per_second IS NULL OR (rate_per_second > 0 AND rate_per_second < 'Infinity' AND rate_burst > 0)))
);

-- The running tasks of a queue, counted by a claim under a limit; and, with the owner, those of a worker.
DROP INDEX weir_schema.tasks_running_owner;
CREATE INDEX tasks_running ON weir_schema.tasks (queue, lease_owner) WHERE state = 'running';

-- The claim of version 5, under the queue's controls. Its rows are the claimed tasks, in claim order; for a
-- queue with a control, one more row follows them, whose `id` is NULL: `limited` says whether the queue
-- has a limit on running tasks (so that finishing one of them should wake the queue's claimers), and
-- `held_back_millis` whether the controls held the claim back (NULL: no; -1: until a task of the queue
-- finishes or the controls change; n >= 0: until the rate's next token, n ms from now).
CREATE FUNCTION weir_schema.claim_controlled(p_queue text, p_owner bigint, p_limit integer, p_lease_millis bigint)
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

-- The claims the previous releases' workers call, now under the controls too.
CREATE OR REPLACE FUNCTION weir_schema.claim_with_headers(p_queue text, p_owner bigint, p_limit integer, p_lease_millis bigint)
RETURNS TABLE (
  id bigint, lease_token bigint, attempt integer, max_attempts integer, priority smallint,
  ordering_key text, payload text, created_micros bigint, headers text
)
LANGUAGE sql
AS $$
  SELECT c.id, c.lease_token, c.attempt, c.max_attempts, c.priority, c.ordering_key, c.payload,
    c.created_micros, c.headers
  FROM weir_schema.claim_controlled(p_queue, p_owner, p_limit, p_lease_millis) AS c
  WHERE c.id IS NOT NULL
$$;

CREATE OR REPLACE FUNCTION weir_schema.claim(p_queue text, p_owner bigint, p_limit integer, p_lease_millis bigint)
RETURNS TABLE (
  id bigint, lease_token bigint, attempt integer, max_attempts integer, priority smallint,
  ordering_key text, payload text, created_micros bigint
)
LANGUAGE sql
AS $$
  SELECT c.id, c.lease_token, c.attempt, c.max_attempts, c.priority, c.ordering_key, c.payload,
    c.created_micros
  FROM weir_schema.claim_controlled(p_queue, p_owner, p_limit, p_lease_millis) AS c
  WHERE c.id IS NOT NULL
$$;
