-- weir: compatible-with-previous: yes
--   version-1 workers never read `head` and insert with its default, true, the safe side; the next task
--   of a key after one they finish waits for the periodic head repair; without the dropped trigger their
--   enqueues wake nobody, so workers find those tasks at their next poll.
--
-- weir-postgres schema, version 2: the claim skips the tasks waiting behind their ordering key, and enqueues
-- wake the workers themselves instead of through a trigger.
--
-- `head` marks the tasks a claim may consider: every task without an ordering key, and for a key, its
-- earliest task. It is a hint, never the authority: the claim still checks that no earlier task of the key
-- is left and none is running, so a task marked when it should not be costs one index probe and nothing
-- else. The opposite mistake would hide a key's head from every claim, so the marks are kept on the safe
-- side three ways: an insert leaves a keyed task unmarked only if it sees an earlier task of its key; every
-- statement that removes a keyed task marks the key's next one; and workers periodically mark the head of
-- any key left without one (an insert whose transaction overlapped the removal of its key's last task sees
-- that task, and the removal does not see the insert).
--
-- The statement-level insert trigger needed a transition table to learn the inserted queues, and
-- PostgreSQL copies every inserted row into it, payload included: a fifth of a batch enqueue's time. weir's
-- own batches now notify their queue in their transaction, and so does this function. A row inserted into
-- `tasks` by other means wakes nobody: workers find it at their next poll.

ALTER TABLE weir_schema.tasks ADD COLUMN head boolean NOT NULL DEFAULT true;

UPDATE weir_schema.tasks AS t SET head = false
WHERE t.ordering_key IS NOT NULL AND EXISTS (
  SELECT 1 FROM weir_schema.tasks AS e
  WHERE e.queue = t.queue AND e.ordering_key = t.ordering_key AND e.id < t.id);

DROP INDEX weir_schema.tasks_claim;
CREATE INDEX tasks_claim ON weir_schema.tasks (queue, priority, run_at, id)
  WHERE state = 'available' AND (ordering_key IS NULL OR head);
-- The tasks waiting behind their key, by key: the periodic repair walks one entry per key.
CREATE INDEX tasks_waiting ON weir_schema.tasks (queue, ordering_key, id)
  WHERE ordering_key IS NOT NULL AND NOT head;

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
