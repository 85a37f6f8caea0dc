#!/usr/bin/env bash
# What a claim costs on statistics that say `tasks` is empty (analyzed while the queue was empty, then filled),
# with a completed parent's dependents to take from `waiting` (docs/lab/durable.md, "Migration 20: the
# dependents' look-ups on stale statistics"). In the server alone, for migrations 19 and 20 in turn, in a
# scratch schema: 5,000 tasks enqueued, deleted and analyzed; then N dependents of a completed parent (named
# in `ready_parents`), N of a parent that has not ended, and N available tasks (N = 20,000 unless given), all
# in one queue; then ten claims of 500 (`claim_with_headers`), each in its own transaction, and prints each one's
# milliseconds as psql's \timing reports them. Needs psql and a server on which you may create schemas:
#   scripts/stale-claim-figures.sh postgresql://postgres:weir@127.0.0.1:5432/postgres [N]
# The schema (weir_stale_claim) is dropped at the end.
set -euo pipefail
url=${1:?usage: scripts/stale-claim-figures.sh URL [N]}
n=${2:-20000}
cd "$(dirname "$0")/.."
migrations=postgres/src/main/resources/weir/postgres/migrations
P=(env PGOPTIONS="-c client_min_messages=warning" psql "$url" -q -At -v ON_ERROR_STOP=1)
s=weir_stale_claim

. scripts/lib/settle.sh
for upto in 19 20; do
  scratch_schema "$s" "$upto"
  "${P[@]}" -c "INSERT INTO $s.tasks (queue, payload) SELECT 'st', '{}' FROM generate_series(1, 5000)" \
    -c "DELETE FROM $s.tasks" -c "ANALYZE $s.tasks" \
    -c "INSERT INTO $s.tasks (queue, payload, parents_left, state, waits_on)
        SELECT 'st', '{}', 1, 'waiting', p FROM generate_series(1, $n), (VALUES (-1), (-2)) AS v(p)" \
    -c "INSERT INTO $s.tasks (queue, payload) SELECT 'st', '{}' FROM generate_series(1, $n)" \
    -c "INSERT INTO $s.ready_parents (queue, parent) VALUES ('st', -1)"
  echo "migration $upto: reltuples $("${P[@]}" -c "SELECT reltuples::bigint FROM pg_class WHERE oid = '$s.tasks'::regclass")"
  for i in $(seq 1 10); do
    echo '\timing on'
    echo "SELECT count(*) FROM $s.claim_with_headers('st', 1, 500, 60000);"
  done | "${P[@]}" -f - | paste -d' ' - - | sed 's/^/  claimed /'
done
"${P[@]}" -c "DROP SCHEMA $s CASCADE"
