-- weir: compatible-with-previous: yes
--   nullable columns, a claim function beside `claim`, and a defaulted last
--   parameter of `enqueue`: calls written for version 4 mean what they meant.
--
-- weir-postgres schema, version 5: string headers stored with each task and handed to its handler (trace
-- context, a tenant, a correlation id), the way message brokers carry metadata beside the body.
--
-- `headers` is a JSON object of strings, NULL for a task without headers, so that such tasks store and
-- read nothing more than before. The columns are nullable without a default: adding them rewrites no row,
-- and the check is added NOT VALID, which skips reading the table (every existing row is NULL); it holds
-- for every row written from now on.
--
-- Workers of version 4 keep running while this is applied, and go on working: they insert without naming
-- `headers` (NULL), claim through `claim`, which is left as it was, and their retries and rescues update
-- rows in place, so the headers of a task they handle stay with it. Only a task they move to `finished`
-- loses its headers there (their insert does not name the column). Workers of version 5 claim through
-- `claim_with_headers`. `enqueue` gains a last parameter with a default, so a call written for version 4,
-- by position or by name, means what it meant.

ALTER TABLE weir_schema.tasks
  ADD COLUMN headers jsonb,
  ADD CONSTRAINT tasks_headers_strings CHECK (
    headers IS NULL OR (
      jsonb_typeof(headers) = 'object'
      AND NOT jsonb_path_exists(headers, '$.keyvalue() ? (@.key == "" || @.value.type() != "string")'))) NOT VALID;

ALTER TABLE weir_schema.finished ADD COLUMN headers jsonb;

-- The claim of version 4 with the headers as one more column, as text (NULL when the task has none). A
-- function's result columns cannot change in place, and `claim` serves version 4's workers until they are
-- gone, hence a second function.
CREATE FUNCTION weir_schema.claim_with_headers(p_queue text, p_owner bigint, p_limit integer, p_lease_millis bigint)
RETURNS TABLE (
  id bigint, lease_token bigint, attempt integer, max_attempts integer, priority smallint,
  ordering_key text, payload text, created_micros bigint, headers text
)
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
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
    LIMIT p_limit
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
    (extract(epoch FROM c.created_at) * 1000000)::bigint, c.headers::text
  FROM claimed AS c ORDER BY c.priority, c.run_at, c.id;
END
$$;

-- A new parameter makes a new function beside the old one, and a call that both could take would be
-- ambiguous: the old one goes in the same transaction. An empty object is stored as NULL.
DROP FUNCTION weir_schema.enqueue(text, jsonb, integer, timestamptz, integer, text, text);

CREATE FUNCTION weir_schema.enqueue(
  queue        text,
  payload      jsonb,
  priority     integer DEFAULT 0,
  run_at       timestamptz DEFAULT now(),
  max_attempts integer DEFAULT 20,
  ordering_key text DEFAULT NULL,
  unique_key   text DEFAULT NULL,
  headers      jsonb DEFAULT NULL,
  OUT task_id  bigint,
  OUT inserted boolean
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  LOOP
    INSERT INTO weir_schema.tasks AS t (queue, payload, priority, run_at, max_attempts, ordering_key, unique_key, head, headers)
    VALUES (enqueue.queue, enqueue.payload, enqueue.priority::smallint, enqueue.run_at, enqueue.max_attempts,
            enqueue.ordering_key, enqueue.unique_key,
            enqueue.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM weir_schema.tasks AS e
              WHERE e.queue = enqueue.queue AND e.ordering_key = enqueue.ordering_key),
            nullif(enqueue.headers, '{}'::jsonb))
    ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
    RETURNING t.id INTO task_id;
    IF task_id IS NOT NULL THEN
      inserted := true;
      -- delivered at commit, and folded with the transaction's other notifications of the queue
      PERFORM pg_notify('weir_schema.tasks', enqueue.queue);
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
