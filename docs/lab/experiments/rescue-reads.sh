#!/usr/bin/env bash
# What one rescue round reads (docs/lab/durable.md, "The rescue's reads"): weir's migrations applied to a
# scratch schema on the local Debian server (scripts/start-postgres.sh), 10 live workers holding 20,000
# running tasks in 5 queues beside 50,000 available ones, then EXPLAIN (ANALYZE, BUFFERS) of the statement as
# it was before 2026-12-01 (every running task read each round) and as it is now, without and with the look
# at the leases; then the beat of one of the workers, which holds 2,000 of the running tasks, none due for an
# extension (docs/lab/durable.md, "What a beat reads"). A measurement fixture: the statements are copies of
# WorkerSql.rescue's SELECT part (the CTEs that find the rows, not the ones that change them) and of
# WorkerSql.beat, taken on the day; the library's own is the truth.
#   docs/lab/experiments/rescue-reads.sh [ROUNDS]     (needs root: runs psql as the postgres user)
set -euo pipefail
cd "$(dirname "$0")/../../.."
rounds=${1:-5}
schema=rescue_reads
psql() { su postgres -c "psql -q -v ON_ERROR_STOP=1 $*"; }
{
  echo "DROP SCHEMA IF EXISTS $schema CASCADE; BEGIN; CREATE SCHEMA $schema;"
  echo "CREATE TABLE $schema.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());"
  cat postgres/src/main/resources/weir/postgres/migrations/*.sql | sed "s/weir_schema/$schema/g"
  echo "COMMIT;"
  echo "INSERT INTO $schema.workers (name, beat_every) SELECT 'w' || g, interval '1 second' FROM generate_series(1, 10) g;"
  echo "INSERT INTO $schema.tasks (queue, payload, state, attempt, lease_owner, lease_expires_at, lease_token)
        SELECT 'q' || (g % 5), '{}'::jsonb, 'running', 1, (SELECT min(id) FROM $schema.workers) + (g % 10),
               now() + interval '1 day', g FROM generate_series(1, 20000) g;"
  echo "INSERT INTO $schema.tasks (queue, payload) SELECT 'q' || (g % 5), '{}'::jsonb FROM generate_series(1, 50000) g;"
  echo "VACUUM ANALYZE $schema.tasks; VACUUM ANALYZE $schema.workers;"
} >/tmp/rescue-reads-setup.sql
psql -f /tmp/rescue-reads-setup.sql >/dev/null

# deadAfter of a day: the planted workers stay alive however long the script runs
owners="owners AS (
  SELECT w.id, CASE
    WHEN w.heartbeat_at < now() - interval '1 day' THEN 'worker ' || w.id || ' stopped heartbeating'
    WHEN w.heartbeat_at < now() - w.beat_every AND w.session_since > pg_postmaster_start_time()
         AND NOT EXISTS (SELECT 1 FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                         AND l.classid = 1 AND l.objid = w.id % 2147483648)
      THEN 'worker ' || w.id || ' lost its database session'
    END AS gone
  FROM $schema.workers AS w)"
reason="CASE WHEN o.id IS NULL THEN 'worker ' || t.lease_owner || ' stopped heartbeating' ELSE coalesce(o.gone, 'lease expired') END"
cat >/tmp/rescue-reads-before.sql <<SQL
EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) WITH $owners, lost AS (
  SELECT t.id, $reason AS reason FROM $schema.tasks AS t LEFT JOIN owners AS o ON o.id = t.lease_owner
  WHERE t.state = 'running' AND (o.id IS NULL OR o.gone IS NOT NULL OR t.lease_expires_at < now())
  LIMIT 1000 FOR UPDATE OF t SKIP LOCKED) SELECT count(*) FROM lost;
SQL
cat >/tmp/rescue-reads-after.sql <<SQL
PREPARE rescue(boolean) AS WITH RECURSIVE held AS (
  (SELECT t.queue, t.lease_owner FROM $schema.tasks AS t WHERE t.state = 'running' ORDER BY t.queue, t.lease_owner LIMIT 1)
  UNION ALL
  SELECT n.queue, n.lease_owner FROM held AS h CROSS JOIN LATERAL (
    SELECT t.queue, t.lease_owner FROM $schema.tasks AS t
    WHERE t.state = 'running' AND (t.queue, t.lease_owner) > (h.queue, h.lease_owner)
    ORDER BY t.queue, t.lease_owner LIMIT 1) AS n
), $owners, gone AS MATERIALIZED (
  SELECT h.queue, h.lease_owner FROM held AS h LEFT JOIN owners AS o ON o.id = h.lease_owner
  WHERE o.id IS NULL OR o.gone IS NOT NULL
), candidates AS (
  SELECT x.id FROM gone AS g CROSS JOIN LATERAL (
    SELECT t.id FROM $schema.tasks AS t
    WHERE t.state = 'running' AND t.queue = g.queue AND t.lease_owner = g.lease_owner) AS x
  UNION
  SELECT t.id FROM $schema.tasks AS t WHERE \$1 AND t.state = 'running' AND t.lease_expires_at < now()
), lost AS (
  SELECT t.id, $reason AS reason FROM $schema.tasks AS t LEFT JOIN owners AS o ON o.id = t.lease_owner
  WHERE t.id = ANY(ARRAY(SELECT id FROM candidates)) AND t.state = 'running'
    AND (o.id IS NULL OR o.gone IS NOT NULL OR t.lease_expires_at < now())
  LIMIT 1000 FOR UPDATE OF t SKIP LOCKED) SELECT count(*) FROM lost;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) EXECUTE rescue(false);
EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) EXECUTE rescue(true);
SQL
summary() { grep -E "^ +Buffers: shared|Execution Time" | awk '/Buffers/ && !b {print "  buffers: " $0; b=1} /Execution/ {print "  " $0; b=0}' | sed 's/  */ /g'; }
# the first worker's beat: its 2,000 tokens (g % 10 = 0), a lease of 60 s, none due; the beat as it was before
# 2026-12-01 (every token's lease read by the extension) and as it is now (only the tokens the worker found due
# are sent to it: none here), with the plan the server picks for the values bound (JDBC sends them bound)
tokens="'{$(seq -s, 10 10 20000)}'"
first=$(psql -tA -c "'SELECT min(id) FROM $schema.workers'")
alive="alive AS (INSERT INTO $schema.workers (id, name, beat_every) VALUES (\$1, 'w1', interval '1 second')
  ON CONFLICT (id) DO UPDATE SET heartbeat_at = now() RETURNING 1)"
gone="SELECT h.token, t.cancel_requested FROM set_config('synchronous_commit', 'off', true) AS async, unnest(\$2::bigint[]) AS h(token)
  LEFT JOIN $schema.tasks AS t ON t.lease_token = h.token AND t.state = 'running' WHERE t.id IS NULL OR t.cancel_requested IS NOT NULL"
cat >/tmp/rescue-reads-beat.sql <<SQL
PREPARE before(bigint, bigint[], bigint) AS WITH $alive
, extended AS (UPDATE $schema.tasks SET lease_expires_at = now() + \$3 * interval '1 millisecond'
  WHERE lease_token = ANY(\$2) AND state = 'running' AND lease_expires_at < now() + (\$3 / 2) * interval '1 millisecond' RETURNING 1)
$gone;
PREPARE after(bigint, bigint[], bigint, bigint[]) AS WITH $alive
, extended AS (UPDATE $schema.tasks SET lease_expires_at = now() + \$3 * interval '1 millisecond'
  WHERE lease_token = ANY(\$4) AND state = 'running' RETURNING 1)
$gone;
SET plan_cache_mode = force_custom_plan;
EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) EXECUTE before($first, $tokens, 60000);
EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) EXECUTE after($first, $tokens, 60000, '{}');
SQL
# per statement: the extension's buffers (the line right after its `Update` node; none when it read nothing),
# the buffers of the rest (the plan's first line), the planning's, and the time
beat() {
  awk '/QUERY PLAN/ {whole = ""; ext = " 0"} /Update on tasks/ {upd = 1; next}
       upd {if ($0 ~ /Buffers/) ext = $0; upd = 0} /Buffers: shared/ && whole == "" {whole = $0}
       /Planning:/ {plan = 1} plan && /Buffers/ {planned = $0; plan = 0}
       /Execution Time/ {gsub(/ +/, " "); print "  extension:" ext ", the rest:" whole ", planning:" planned ", " $0}' |
    sed 's/ *Buffers: shared hit=/ /g'
}
for r in $(seq 1 "$rounds"); do
  echo "round $r, before (every round):"; psql -f /tmp/rescue-reads-before.sql | summary
  echo "round $r, after (a round without the leases, then one with them):"; psql -f /tmp/rescue-reads-after.sql | summary
  echo "round $r, a beat of 2,000 tokens, before then after:"
  psql -f /tmp/rescue-reads-beat.sql | beat
done
psql -c "'DROP SCHEMA $schema CASCADE'" >/dev/null 2>&1
