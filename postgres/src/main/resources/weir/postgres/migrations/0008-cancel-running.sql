-- weir: compatible-with-previous: yes
--   a nullable column, which earlier workers never read.
--
-- weir-postgres schema: cancelling a running task (TaskAdmin.cancel; ADR 0029).
--
-- A running task belongs to its worker, so a cancel does not move it: it records the request on the row,
-- and tells the worker (a notification on the schema's cancel channel, the claim's lease token first in
-- its payload; the worker's heartbeat finds the request too, should the notification be missed). The
-- worker interrupts the task's handler; whatever then finishes the claim (a failure, a hand-back, a
-- snooze, a rescue once the worker is gone) moves a task whose cancel was requested to `finished` as
-- cancelled, with the reason among its errors, instead of putting it back. A task that completes before
-- its worker interrupts it stays completed.
--
-- Additive: a nullable column, nothing else changes. Workers of an earlier release never read it: a task
-- of theirs runs to its end, and one that fails is retried as before; cancel such a task again once it
-- is available.

ALTER TABLE weir_schema.tasks ADD COLUMN cancel_requested text;
