#!/usr/bin/env bash
# The cost of ending tasks with dependents, in the server alone (docs/lab/durable.md, "What made a graph's
# tasks slower, and what changed"): for each of two scratch schemas, migrated up to VERSION_A and VERSION_B
# (default 15 and 16), times one DELETE of 1,000 tasks (how a worker's batch of results ends them) for three
# shapes, twice each, then the end of one root that releases 19,998 dependents:
#   plain   1,000 tasks without dependents
#   one     1,000 parents, each with a dependent of its own (1 -> 1)
#   fanin   1,000 parents of one dependent (a fan-in)
# Each DELETE runs in a session that ended 1,000 tasks of the same shape just before (functions compiled,
# plans cached); the root's, in a fresh session. Last, the server's side of the lab's timed round without
# workers: 20,000 independent tasks, then a 1 -> 19,998 -> 1 graph, each claimed 500 at a time by the claim
# function and completed by one DELETE per claim, every statement in its own transaction, in one session;
# the claims' and the completions' milliseconds are summed apart. Needs psql and a server you may create
# schemas on:
#   scripts/settle-figures.sh postgresql://postgres:weir@127.0.0.1:5432/postgres [VERSION_A VERSION_B]
# The schemas (weir_settle_15, weir_settle_16 by default) are dropped at the end.
set -euo pipefail
url=${1:?usage: scripts/settle-figures.sh URL [VERSION_A VERSION_B]}
versions=("${2:-15}" "${3:-16}")
cd "$(dirname "$0")/.."
migrations=postgres/src/main/resources/weir/postgres/migrations
P=(env PGOPTIONS="-c client_min_messages=warning" psql "$url" -q -At -v ON_ERROR_STOP=1)

. scripts/lib/settle.sh

# 1,000 tasks of `shape` in queue `q` of schema `s`
populate() {
  local s=$1 shape=$2 q=$3
  case $shape in
    plain) "${P[@]}" -c "INSERT INTO $s.tasks (queue, payload) SELECT '$q', '{\"n\":1}' FROM generate_series(1, 1000)" ;;
    one) "${P[@]}" -c "WITH p AS (INSERT INTO $s.tasks (queue, payload, dependents)
          SELECT '$q', '{\"n\":1}', true FROM generate_series(1, 1000) RETURNING id),
        c AS (INSERT INTO $s.tasks (queue, payload, after, parents_left, state, workflow)
          SELECT '$q', '{}', ARRAY[p.id], 1, 'waiting', p.id FROM p RETURNING id, after[1] AS parent)
        INSERT INTO $s.dependencies (parent, child, any_outcome) SELECT parent, id, false FROM c" ;;
    fanin) "${P[@]}" -c "WITH p AS (INSERT INTO $s.tasks (queue, payload, dependents)
          SELECT '$q', '{\"n\":1}', true FROM generate_series(1, 1000) RETURNING id),
        c AS (INSERT INTO $s.tasks (queue, payload, after, parents_left, state)
          SELECT '$q', '{}', (SELECT array_agg(id ORDER BY id) FROM p), 1000, 'waiting' RETURNING id)
        INSERT INTO $s.dependencies (parent, child, any_outcome) SELECT p.id, c.id, false FROM p, c" ;;
  esac
}

# milliseconds of one DELETE of the shape's 1,000 available tasks, after a warm-up of as many
timed() {
  local s=$1 shape=$2
  populate "$s" "$shape" "$shape"
  populate "$s" "$shape" warm
  printf '%s\n' "DELETE FROM $s.tasks WHERE queue = 'warm' AND state <> 'waiting';" 'BEGIN;' '\timing on' \
    "DELETE FROM $s.tasks WHERE queue = '$shape' AND state <> 'waiting';" '\timing off' 'COMMIT;' |
    "${P[@]}" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
  "${P[@]}" -c "DELETE FROM $s.tasks" -c "DELETE FROM $s.dependencies" -c "DELETE FROM $s.finished"
}

# milliseconds of the end of one root whose 19,998 dependents (in one workflow) it releases
fanout() {
  local s=$1
  "${P[@]}" -c "WITH r AS (INSERT INTO $s.tasks (queue, payload, dependents) VALUES ('fo', '{}', true) RETURNING id),
      m AS (INSERT INTO $s.tasks (queue, payload, after, parents_left, state, workflow)
        SELECT 'fo', '{\"n\":1}', ARRAY[r.id], 1, 'waiting', r.id FROM r, generate_series(1, 19998)
        RETURNING id, after[1] AS parent)
      INSERT INTO $s.dependencies (parent, child, any_outcome) SELECT parent, id, false FROM m"
  printf '%s\n' '\timing on' "DELETE FROM $s.tasks WHERE queue = 'fo' AND state = 'available';" |
    "${P[@]}" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
  "${P[@]}" -c "DELETE FROM $s.tasks" -c "DELETE FROM $s.dependencies" -c "DELETE FROM $s.finished"
}

# the claims' and completions' milliseconds of `queue`'s tasks, claimed 500 at a time until none is left
drain() {
  local s=$1 q=$2
  { echo '\timing on'; claims_and_completions "$s" "$q"; } |
    "${P[@]}" | awk '/^claim\|/ { k = "claim" } /^complete\|/ { k = "complete" } /^Time:/ { t[k] += $2 }
      END { printf "claims %.0f ms, completions %.0f ms", t["claim"], t["complete"] }'
}

# the loop: independent tasks, then a graph of as many
rounds() {
  local s=$1
  "${P[@]}" -c "INSERT INTO $s.tasks (queue, payload) SELECT 'ind', '{\"n\":1}' FROM generate_series(1, 20000)"
  echo "independent: $(drain "$s" ind)"
  fan_graph "$s"
  echo "graph: $(drain "$s" gr)"
  "${P[@]}" -c "DELETE FROM $s.tasks" -c "DELETE FROM $s.dependencies" -c "DELETE FROM $s.finished"
}

for v in "${versions[@]}"; do scratch_schema "weir_settle_$v" "$v"; done
date -u '+%Y-%m-%d %H:%M UTC'
uptime
for v in "${versions[@]}"; do
  s=weir_settle_$v
  for shape in plain one fanin; do
    echo "migration $v, $shape: $(timed "$s" "$shape") ms, $(timed "$s" "$shape") ms"
  done
  echo "migration $v, root of 19,998: $(fanout "$s") ms, $(fanout "$s") ms"
done
for v in "${versions[@]}"; do
  rounds "weir_settle_$v" | sed "s/^/migration $v, /"
done
for v in "${versions[@]}"; do "${P[@]}" -c "DROP SCHEMA weir_settle_$v CASCADE"; done
