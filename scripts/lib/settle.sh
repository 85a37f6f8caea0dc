# Sourced by the settle scripts (scripts/settle-*.sh). Needs `migrations` (the migrations' directory) and
# `P` (a psql command line, as an array) set by the caller.
# scratch_schema SCHEMA UPTO: SCHEMA dropped and created again with migrations 1..UPTO applied as
# Database.migrate applies them (its table of versions too)
scratch_schema() {
  local s=$1 upto=$2 f n
  "${P[@]}" -c "DROP SCHEMA IF EXISTS $s CASCADE" -c "CREATE SCHEMA $s" \
    -c "CREATE TABLE $s.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
  for f in "$migrations"/*.sql; do
    n=$(basename "$f" | cut -c1-4)
    [ $((10#$n)) -le "$upto" ] || continue
    sed "s/weir_schema/$s/g" "$f" | "${P[@]}" -1 -f - >/dev/null
  done
}

# fan_graph SCHEMA: a 1 -> 19,998 -> 1 graph in queue `gr`, written as an enqueue leaves it (the root available,
# the 19,998 and the last waiting, each edge in `dependencies`), in one statement
fan_graph() {
  local s=$1
  "${P[@]}" -c "WITH r AS (INSERT INTO $s.tasks (queue, payload, dependents) VALUES ('gr', '{}', true) RETURNING id),
      m AS (INSERT INTO $s.tasks (queue, payload, after, parents_left, state, workflow, dependents)
        SELECT 'gr', '{\"n\":1}', ARRAY[r.id], 1, 'waiting', r.id, true FROM r, generate_series(1, 19998)
        RETURNING id, after[1] AS parent),
      e AS (INSERT INTO $s.dependencies (parent, child, any_outcome) SELECT parent, id, false FROM m),
      f AS (INSERT INTO $s.tasks (queue, payload, after, parents_left, state, workflow)
        SELECT 'gr', '{}', (SELECT array_agg(id ORDER BY id) FROM m), 19998, 'waiting', (SELECT id FROM r) RETURNING id)
      INSERT INTO $s.dependencies (parent, child, any_outcome) SELECT m.id, f.id, false FROM m, f"
}

# claims_and_completions SCHEMA QUEUE: prints 45 rounds of a claim of 500 by the claim function (owner 1) and
# one DELETE completing what it claimed, each answering a row `claim|N` or `complete|N`, for psql to run
claims_and_completions() {
  local s=$1 q=$2 i
  for i in $(seq 1 45); do
    echo "SELECT 'claim', count(*) FROM $s.claim('$q', 1, 500, 60000);"
    echo "WITH d AS (DELETE FROM $s.tasks AS t WHERE t.lease_token = ANY(ARRAY(SELECT r.lease_token FROM $s.tasks AS r
      WHERE r.queue = '$q' AND r.state = 'running' AND r.lease_owner = 1)) AND t.state = 'running' RETURNING 1)
      SELECT 'complete', count(*) FROM d;"
  done
}
