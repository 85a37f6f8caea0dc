-- weir: compatible-with-previous: yes
--   one partial index rebuilt with a narrower predicate; no table, column, function or trigger changes.
--   Earlier releases' worker statements never read it. Their read models of a workflow (`workflow = W` on
--   `tasks`) still return every task of it, but can no longer read all of them through this index.
--
-- weir-postgres schema: the index of a workflow's live tasks leaves out its running ones (issue 57; ADR 0058).
--
-- A claim rewrites the task's row as running, and that new row version enters every index whose predicate
-- it meets. `tasks_in_workflow` took one entry per claim of every task of a workflow, which a task outside
-- workflows does not pay; the readers of a workflow's live tasks never needed the running ones from it:
-- the running tasks of the whole schema are those in flight on the workers, and `tasks_running`
-- lists exactly them. The index now holds a workflow's waiting and available tasks only, and the read
-- models read its running tasks in an arm of their own, from `tasks_running`.
--
-- Workers of version 16 go on working: their statements name no workflow index. The index is built here,
-- reading the unfinished tasks once, while claims and results wait.

DROP INDEX weir_schema.tasks_in_workflow;
CREATE INDEX tasks_in_workflow ON weir_schema.tasks (workflow, id)
  WHERE workflow IS NOT NULL AND state <> 'running';
