-- weir: compatible-with-previous: yes
--   a new table, which earlier releases never read or write.
--
-- weir-postgres schema: the audit log of the operators' actions.
--
-- Each action of `TaskAdmin` that changes a queue's controls or a task (pause, resume, limits, retry, cancel,
-- discard; a batch is a row per task) inserts its row in the transaction of the action itself: a row exists
-- if and only if the action committed, and `at`, the transaction's time, is when it took effect. `operator`
-- names who acted (the console's operator, or whoever the calling code says) and `session` tells their
-- sessions apart; `queue` and `task` are the target (a queue's action has no task; a task's action names its
-- queue unless there was no such task); `outcome` is what happened (`done`; `requested`, the cancel of a
-- running task that its worker carries out; `refused`, the action did not apply, `detail` saying why;
-- `not-found`); `detail` holds the limits set or a cancel's reason.
--
-- Workers prune it as they prune `finished`, after `Retention.audit`. The list reads it newest first by id,
-- filtered by operator, queue or task: one index each, in that order; the prune reads `audit_at`.
--
-- Workers of version 10 never read or write it and go on working; their `TaskAdmin`'s actions are not
-- recorded.

CREATE TABLE weir_schema.audit (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  operator text NOT NULL,
  session text,
  action text NOT NULL CHECK (action IN ('pause', 'resume', 'limits', 'retry', 'cancel', 'discard')),
  queue text,
  task bigint,
  outcome text NOT NULL CHECK (outcome IN ('done', 'requested', 'refused', 'not-found')),
  detail text
);
CREATE INDEX audit_at ON weir_schema.audit (at);
CREATE INDEX audit_operator ON weir_schema.audit (operator, id);
CREATE INDEX audit_queue ON weir_schema.audit (queue, id);
CREATE INDEX audit_task ON weir_schema.audit (task, id) WHERE task IS NOT NULL;
