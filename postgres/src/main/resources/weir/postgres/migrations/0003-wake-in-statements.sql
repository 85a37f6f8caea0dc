-- weir-postgres schema, version 3: enqueues wake the workers themselves instead of through a trigger.
--
-- The statement-level insert trigger needed a transition table to learn the inserted queues, and
-- PostgreSQL copies every inserted row into it, payload included: a fifth of a batch enqueue's time. weir's
-- own batches now notify their queue in their transaction, and so does this function. A row inserted into
-- `tasks` by other means wakes nobody: workers find it at their next poll.

DROP TRIGGER tasks_notify ON weir_schema.tasks;
DROP FUNCTION weir_schema.notify_inserted();

CREATE OR REPLACE FUNCTION weir_schema.enqueue(
  queue        text,
  payload      jsonb,
  priority     integer DEFAULT 0,
  run_at       timestamptz DEFAULT now(),
  max_attempts integer DEFAULT 20,
  ordering_key text DEFAULT NULL,
  unique_key   text DEFAULT NULL,
  OUT task_id  bigint,
  OUT inserted boolean
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  LOOP
    INSERT INTO weir_schema.tasks AS t (queue, payload, priority, run_at, max_attempts, ordering_key, unique_key, head)
    VALUES (enqueue.queue, enqueue.payload, enqueue.priority::smallint, enqueue.run_at, enqueue.max_attempts,
            enqueue.ordering_key, enqueue.unique_key,
            enqueue.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM weir_schema.tasks AS e
              WHERE e.queue = enqueue.queue AND e.ordering_key = enqueue.ordering_key))
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
