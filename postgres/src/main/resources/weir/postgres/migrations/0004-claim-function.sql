-- weir: compatible-with-previous: yes
--   a new function: earlier workers keep their own claim statement.
--
-- weir-postgres schema, version 4: the claim is a function whose plan does not depend on the table's
-- statistics being fresh.
--
-- A queue table is often empty, and autovacuum may analyze it then: its statistics say "no rows" until the
-- next analyze, while a burst of work arrives. Planned for an empty table, the claim statement could pick
-- a bitmap scan of every available task followed by a sort (a claim's cost growing with the backlog), or,
-- worse, join the picked rows to the table by walking the whole primary key once per picked row: a claim
-- of 500 tasks over a backlog of 200,000 then ran for half a minute of CPU. Here the picked rows are
-- updated through `id = ANY(array)`, which has no join to get wrong, and the function is planned with
-- bitmap and sequential scans off, which leaves the claim index, read in its order, as the only way to the
-- first tasks in line. The settings hold only while the function runs. PL/pgSQL keeps the plan for the
-- session, planned again when the statistics change.
--
-- Same rules as before: by priority, then run-at, then id; a keyed task only while it is its key's head
-- (none of its key earlier, none running); rows locked by another claim are skipped. The caller sets the
-- transaction's commit to asynchronous itself: a setting made inside would end with the function.

CREATE FUNCTION weir_schema.claim(p_queue text, p_owner bigint, p_limit integer, p_lease_millis bigint)
RETURNS TABLE (
  id bigint, lease_token bigint, attempt integer, max_attempts integer, priority smallint,
  ordering_key text, payload text, created_micros bigint
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
      t.created_at, t.run_at
  )
  SELECT c.id, c.lease_token, c.attempt, c.max_attempts, c.priority, c.ordering_key, c.payload::text,
    (extract(epoch FROM c.created_at) * 1000000)::bigint
  FROM claimed AS c ORDER BY c.priority, c.run_at, c.id;
END
$$;
