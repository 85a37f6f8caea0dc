-- weir: compatible-with-previous: yes
--   two columns with defaults: a worker that records no session is judged by its
--   heartbeat alone.
--
-- weir-postgres schema, version 3: a dead worker is found by its database session ending, not only by its
-- heartbeat stopping.
--
-- A worker that listens also holds a session-level advisory lock on its LISTEN connection, keyed by the
-- schema and its id, and records here when it took it (`session_since`) and how often it heartbeats
-- (`beat_every`). When the worker's process dies, its kernel closes the connection, the server ends the
-- session and the lock is free. A rescuer that finds a worker's lock free and its heartbeat more than one
-- period late takes it for dead at once, without waiting for `deadAfter`; a live worker that is merely
-- slow (a long pause, a starved CPU) still holds its lock and is taken for dead only after `deadAfter`.
--
-- Two cases keep the rule from taking a live worker for dead: a worker whose LISTEN connection alone
-- dropped is still heartbeating on its pool, so its heartbeat is not late; and after a server restart every
-- lock is gone, so a lock recorded before the server last started (`pg_postmaster_start_time()`) proves
-- nothing until the worker takes it again. A worker that holds no lock (`session_since` null: notifications
-- off, as behind a transaction-mode PgBouncer) is judged by its heartbeat alone.

ALTER TABLE weir_schema.workers
  ADD COLUMN session_since timestamptz,
  ADD COLUMN beat_every interval NOT NULL DEFAULT interval '1 second';
