-- weir: compatible-with-previous: yes
--   a new table, which earlier workers never read.
--
-- weir-postgres schema: periodic tasks (ADR 0027). One row per schedule, written by the processes that
-- declare it (`Scheduler`); the tick of a schedule is enqueued by whichever of them locks its row first.
--
-- Additive: a new table, nothing else changes, so workers of the previous version keep running against it
-- and never read it.
--
-- The row is the schedule's one definition (the last process to start with a different one wrote it) and
-- its position: every tick strictly after `last_tick` and at or before the server's `now()` that is also at
-- or after `next_tick` is due. A tick's task is inserted in the same transaction that moves `next_tick`
-- past it, under the row's lock: that is what makes each tick enqueued once. The task's unique key,
-- `schedule:<name>:<tick, epoch milliseconds>`, is the second guard.
--
-- The timing is either a Unix cron expression stepped in a time zone (`cron`, `zone`) or a fixed interval
-- (`every_ms`, ticks at the multiples of the interval since the epoch); the database never parses either:
-- the process that ticks computes the next tick from the tick, with the server's `now()` deciding what is
-- due.

CREATE TABLE weir_schema.schedules (
  name         text PRIMARY KEY CHECK (name <> ''),
  queue        text NOT NULL CHECK (queue <> ''),
  payload      jsonb NOT NULL,
  priority     smallint NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 20 CHECK (max_attempts >= 1),
  ordering_key text,
  headers      jsonb,
  cron         text,
  zone         text,
  every_ms     bigint CHECK (every_ms > 0),
  -- after a downtime: 'skip' enqueues the latest due tick only, 'catch-up' the latest max_missed
  missed       text NOT NULL CHECK (missed IN ('skip', 'catch-up')),
  max_missed   integer NOT NULL CHECK (max_missed >= 1),
  last_tick    timestamptz,
  next_tick    timestamptz NOT NULL,
  -- ticks whose task this schema's schedulers inserted
  ticks        bigint NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  CHECK ((cron IS NOT NULL AND zone IS NOT NULL AND every_ms IS NULL)
      OR (cron IS NULL AND zone IS NULL AND every_ms IS NOT NULL))
);
