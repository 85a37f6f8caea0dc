-- weir: compatible-with-previous: yes
--   nullable columns, indexes, a function and a trigger; `enqueue` keeps its parameters (replaced in place).
--   Earlier releases never read or write the new columns; the rows their workers move to `finished` get
--   them from the trigger, as a newer worker's do. A graph that a process of an earlier release enqueues
--   has no workflow id (its tasks keep their parents and batch).
--
-- weir-postgres schema: a workflow's identity, kept after its tasks end (issue 57; ADR 0053).
--
-- A workflow is a set of tasks that wait for one another, named by the id of its first task. `workflow`
-- holds it: a graph's tasks (`TaskGraph`, `Batches.addGraph`) get the id drawn for the graph's first task
-- (the smallest it draws), or, when the graph waits for existing tasks, the workflow of those; a task
-- enqueued alone (or in a batch of independent tasks) after existing tasks joins its parents' workflow,
-- the oldest of them (the smallest id) when they are in several, and a parent in none counts as the root of
-- a workflow named by its own id. So a task's workflow never changes once inserted, and a workflow holds
-- every task whose `workflow` is its id, and the task of that id when that one's `workflow` is NULL (a task
-- enqueued alone, that later tasks waited for). A task enqueued without parents, outside a graph, is in no
-- workflow. Its parents (`after`) have smaller ids than it has, so a workflow read in id order lists every
-- task after the tasks it waits for.
--
-- A task of a workflow or a batch (or with parents, or that others waited for: the first task of a workflow
-- named by its id) keeps `workflow`, `after` and `batch` in `finished`: the
-- trigger `tasks_kept`, whose `WHEN` reads the row being removed, writes them into the row that the
-- statement removing it wrote there, or writes the row, completed, when the statement wrote none (a
-- completion without `keepCompleted`). Every end of a task removes its row (a worker's completion, failure,
-- hand-back or snooze of a cancelled task, a rescue, an operator's cancel, a cascading cancel, a batch's
-- cancel), whoever writes it, a worker of an earlier release included, so every path carries them; a task
-- in no workflow and no batch pays the trigger's test and nothing else. Such tasks are therefore kept in
-- `finished` whatever `keepCompleted` says, until their prune (`Retention`), as tasks with results are.
--
-- An operator's retry of a finished task puts it back with its workflow and parents (its batch counted its
-- first end: it comes back outside it, as migration 13 says).
--
-- Workers of version 13 go on working: their statements are unchanged and name none of the new columns;
-- the indexes are built here, reading each table once, while claims and results wait.

ALTER TABLE weir_schema.tasks ADD COLUMN workflow bigint;

ALTER TABLE weir_schema.finished
  ADD COLUMN workflow bigint,
  ADD COLUMN after bigint[],
  ADD COLUMN batch bigint;

-- a workflow's tasks, live and finished, in id order (its view, its cancel)
CREATE INDEX tasks_in_workflow ON weir_schema.tasks (workflow, id) WHERE workflow IS NOT NULL;
CREATE INDEX finished_in_workflow ON weir_schema.finished (workflow, id) WHERE workflow IS NOT NULL;

-- a batch's finished members, in id order (its view)
CREATE INDEX finished_in_batch ON weir_schema.finished (batch, id) WHERE batch IS NOT NULL;

-- A task of a workflow or a batch left `tasks`: its row in `finished`, written by the statement that removed
-- it, gets its workflow, parents and batch; a statement that wrote none completed the task without keeping
-- it, and the row is written here, completed, as `complete` with `keepCompleted` would have written it.
CREATE FUNCTION weir_schema.task_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO weir_schema.finished AS f (id, queue, payload, priority, state, attempt, max_attempts, ordering_key,
                                         unique_key, errors, created_at, headers, worker, workflow, after, batch)
  VALUES (OLD.id, OLD.queue, OLD.payload, OLD.priority, 'completed', OLD.attempt, OLD.max_attempts,
          OLD.ordering_key, OLD.unique_key, OLD.errors, OLD.created_at, OLD.headers, OLD.lease_owner,
          OLD.workflow, OLD.after, OLD.batch)
  ON CONFLICT (id) DO UPDATE SET workflow = excluded.workflow, after = excluded.after, batch = excluded.batch;
  RETURN NULL;
END
$$;

-- fired at the end of the statement that removes the task, which has written its `finished` row by then
CREATE TRIGGER tasks_kept AFTER DELETE ON weir_schema.tasks
  FOR EACH ROW WHEN (OLD.workflow IS NOT NULL OR OLD.batch IS NOT NULL OR OLD.after IS NOT NULL OR OLD.dependents)
  EXECUTE FUNCTION weir_schema.task_kept();

-- `enqueue` as migration 12 wrote it, and the workflow its task joins: its parents' (see above).
CREATE OR REPLACE FUNCTION weir_schema.enqueue(
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
  v_workflow bigint;  -- the workflow it joins: the oldest of its parents' (see the header)
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
      SELECT t.id, t.dependents, coalesce(t.workflow, t.id) AS workflow
      FROM weir_schema.tasks AS t WHERE t.id = ANY (v_after) FOR KEY SHARE
    ), marked AS (
      UPDATE weir_schema.tasks AS t SET dependents = true
      WHERE t.id = ANY (ARRAY(SELECT h.id FROM held AS h WHERE NOT h.dependents))
      RETURNING t.id
    )
    SELECT coalesce(array_agg(h.id), '{}'), min(h.workflow) INTO v_live, v_workflow FROM held AS h;
    -- a statement of its own, so that its snapshot sees the ends of the parents it waited for
    SELECT coalesce(array_agg(f.id), '{}'), least(v_workflow, min(coalesce(f.workflow, f.id)))
    INTO v_ended, v_workflow
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
                                        head, headers, after, parents_left, state, workflow)
    VALUES (enqueue.queue, enqueue.payload, enqueue.priority::smallint, enqueue.run_at, enqueue.max_attempts,
            enqueue.ordering_key, enqueue.unique_key,
            enqueue.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM weir_schema.tasks AS e
              WHERE e.queue = enqueue.queue AND e.ordering_key = enqueue.ordering_key),
            nullif(enqueue.headers, '{}'::jsonb),
            nullif(v_after, '{}'), cardinality(v_after),
            CASE WHEN cardinality(v_after) > 0 THEN 'waiting' ELSE 'available' END::weir_schema.task_state,
            v_workflow)
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
