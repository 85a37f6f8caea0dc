-- weir: compatible-with-previous: yes
--   a nullable column and two indexes; the dropped index only served a read that
--   still works without it.
--
-- weir-postgres schema: what the console reads on a big history, and the worker of each attempt.
--
-- The console lists finished tasks newest first by enqueue time or by finish time, filtered by state and
-- queue, a page at a time after a position (keyset): each such page must be an index range, however long
-- the history. `finished_created` serves the enqueue order; `finished_by_state` serves a state's (and a
-- queue's) tasks by finish time, and counting a queue's tasks of a state; it takes over from
-- `finished_queue_state`, whose one reader (whether a queue is known) now names the three states so as to
-- use it. The finish order without a filter keeps `finished_prune`.
--
-- `worker` is the worker that ran the attempt a task finished with (NULL for a task cancelled before it
-- ran, and for tasks moved by workers of an earlier release); each failed attempt's entry in `errors` names
-- its worker too.
--
-- Additive for workers of version 8, which go on working: they never read `worker` and leave it NULL.
-- Building the indexes reads the whole `finished` table and, inside the migration's transaction, holds
-- off completions meanwhile. To avoid that on a big history, build them first with `CREATE INDEX
-- CONCURRENTLY` and the same names and definitions; the migration then skips them.

ALTER TABLE weir_schema.finished ADD COLUMN worker bigint;
CREATE INDEX IF NOT EXISTS finished_created ON weir_schema.finished (created_at, id);
CREATE INDEX IF NOT EXISTS finished_by_state ON weir_schema.finished (state, queue, finished_at, id);
DROP INDEX IF EXISTS weir_schema.finished_queue_state;
