#!/usr/bin/env bash
# What a graph's tasks would save if a dependent with one parent were claimed straight from `waiting` once its
# parent completed, instead of being released by an update of its row in its parent's end (docs/lab/durable.md,
# "Issue #57: where the timed rounds' CPU goes"). In the server alone, in a scratch schema migrated to the
# newest version plus a prototype (not a migration): a column naming a dependent's one parent, an index of
# the waiting tasks by it, and a table of the parents that completed. Three drains of 20,000 tasks, each
# claimed 500 at a time and completed by one DELETE per claim, every statement in its own transaction, in one
# session, alternated three times:
#   independent   20,000 tasks without dependencies
#   released      a 1 -> 19,998 -> 1 graph as weir writes it: the root's end releases the 19,998 (each row
#                 written `available`), which the claim function then claims
#   from-waiting  the same graph, the root's end writing one row (its id, in the parents' table); the claim
#                 function, then a claim of the waiting tasks whose parent is in that table, run in each round
# and prints each one's claims' and completions' milliseconds. Needs psql and a server on which you may
# create schemas:
#   scripts/claim-from-waiting-figures.sh postgresql://postgres:weir@127.0.0.1:5432/postgres
# The schema (weir_waiting_proto) is dropped at the end.
set -euo pipefail
url=${1:?usage: scripts/claim-from-waiting-figures.sh URL}
cd "$(dirname "$0")/.."
migrations=postgres/src/main/resources/weir/postgres/migrations
P=(env PGOPTIONS="-c client_min_messages=warning" psql "$url" -q -At -v ON_ERROR_STOP=1)
s=weir_waiting_proto

. scripts/lib/settle.sh
scratch_schema "$s" "$(ls "$migrations" | tail -1 | cut -c1-4)"
"${P[@]}" -c "ALTER TABLE $s.tasks ADD COLUMN parent bigint" \
  -c "CREATE INDEX tasks_waiting_on ON $s.tasks (queue, parent, id) WHERE state = 'waiting' AND parent IS NOT NULL" \
  -c "CREATE TABLE $s.ready (queue text NOT NULL, parent bigint NOT NULL, PRIMARY KEY (queue, parent))"

# the graph of fan_graph, its 19,998 naming their parent, and no edge from the root: its end releases nothing
waiting_graph() {
  "${P[@]}" -c "WITH r AS (INSERT INTO $s.tasks (queue, payload) VALUES ('wt', '{}') RETURNING id),
      m AS (INSERT INTO $s.tasks (queue, payload, after, parents_left, state, workflow, dependents, parent)
        SELECT 'wt', '{\"n\":1}', ARRAY[r.id], 1, 'waiting', r.id, true, r.id FROM r, generate_series(1, 19998)
        RETURNING id),
      f AS (INSERT INTO $s.tasks (queue, payload, after, parents_left, state, workflow)
        SELECT 'wt', '{}', (SELECT array_agg(id ORDER BY id) FROM m), 19998, 'waiting', (SELECT min(id) FROM m) - 1
        RETURNING id)
      INSERT INTO $s.dependencies (parent, child, any_outcome) SELECT m.id, f.id, false FROM m, f"
}

# 45 rounds: the claim function, then the claim from waiting (planned as the claim function plans), then one
# DELETE of what both claimed, whose
# ended tasks without a dependents' edge enter the parents' table in the same statement
from_waiting_rounds() {
  local i
  for i in $(seq 1 45); do
    echo "SELECT 'claim', count(*) FROM $s.claim('wt', 1, 500, 60000);"
    echo "WITH picked AS (
        SELECT t.id FROM $s.ready AS r JOIN $s.tasks AS t ON t.queue = r.queue AND t.parent = r.parent
        WHERE r.queue = 'wt' AND t.state = 'waiting' AND t.parent IS NOT NULL
        ORDER BY t.parent, t.id LIMIT 500 FOR UPDATE OF t SKIP LOCKED
      ), claimed AS (
        UPDATE $s.tasks AS t
        SET state = 'running', parents_left = 0, attempt = t.attempt + 1,
            lease_token = nextval('$s.claim_tokens'), lease_owner = 1, lease_expires_at = now() + interval '60 s'
        WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked AS p))
        RETURNING t.id
      )
      SELECT 'claim', count(*) FROM claimed;"
    echo "WITH d AS (DELETE FROM $s.tasks AS t WHERE t.lease_token = ANY(ARRAY(SELECT r.lease_token FROM $s.tasks AS r
        WHERE r.queue = 'wt' AND r.state = 'running' AND r.lease_owner = 1)) AND t.state = 'running'
        RETURNING t.id, t.dependents),
      p AS (INSERT INTO $s.ready (queue, parent) SELECT 'wt', d.id FROM d WHERE NOT d.dependents)
      SELECT 'complete', count(*) FROM d;"
  done
}

# each drain's session plans as the claim function does (no sequential or bitmap scans), whatever it runs
timed() { echo 'SET enable_seqscan = off;'; echo 'SET enable_bitmapscan = off;'; echo '\timing on'; "$@"; }

# the claims' and completions' milliseconds of psql's timed output
sums() {
  awk '/^claim\|/ { k = "claim" } /^complete\|/ { k = "complete" } /^Time:/ { t[k] += $2 }
    END { printf "claims %.0f ms, completions %.0f ms\n", t["claim"], t["complete"] }'
}

left() { "${P[@]}" -c "SELECT count(*) FROM $s.tasks"; }

clean() { "${P[@]}" -c "DELETE FROM $s.tasks" -c "DELETE FROM $s.dependencies" -c "DELETE FROM $s.finished" -c "DELETE FROM $s.ready"; }

date -u '+%Y-%m-%d %H:%M UTC'
uptime
# an untimed round of each, which compiles the functions and fills the tables once
for round in warm 1 2 3; do
  "${P[@]}" -c "INSERT INTO $s.tasks (queue, payload) SELECT 'ind', '{\"n\":1}' FROM generate_series(1, 20000)"
  ind=$(timed claims_and_completions "$s" ind | "${P[@]}" | sums)
  fan_graph "$s"
  rel=$(timed claims_and_completions "$s" gr | "${P[@]}" | sums)
  [ "$(left)" = 0 ] || { echo "released: tasks left" >&2; exit 1; }
  waiting_graph
  wt=$(timed from_waiting_rounds | "${P[@]}" | sums)
  [ "$(left)" = 0 ] || { echo "from-waiting: tasks left" >&2; exit 1; }
  clean
  [ "$round" = warm ] && continue
  echo "round $round: independent $ind; released $rel; from-waiting $wt"
done
"${P[@]}" -c "DROP SCHEMA $s CASCADE"
