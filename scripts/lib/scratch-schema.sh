# Sourced by the settle scripts. Needs `migrations` (the migrations' directory) and `P` (a psql command line
# as an array) set by the caller.
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
