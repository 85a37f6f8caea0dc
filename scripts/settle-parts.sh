#!/usr/bin/env bash
# Where a graph's completions spend their time, in the server alone (docs/lab/durable.md, "What made a
# graph's tasks slower, and what changed"): in a scratch schema migrated up to VERSION (default: the
# newest), a 1 -> 19,998 -> 1 graph is claimed 500 at a time by the claim function and completed by one
# DELETE per claim in one session, as the last part of scripts/settle-figures.sh does (after an untimed
# round of the same), with auto_explain logging every statement, those the trigger runs included
# (log_nested_statements; row counts, no per-node timing). Prints, per statement (its first line), the
# milliseconds summed over the run, how many times it ran, and whether it ran in the root's completion
# (`root`: its release of the 19,998) or in the others' (`rest`); the top-level DELETE's time includes its
# trigger's statements. Needs psql and a server on which you may create schemas and LOAD auto_explain:
#   scripts/settle-parts.sh postgresql://postgres:weir@127.0.0.1:5432/postgres [VERSION]
# The schema (weir_parts_VERSION) is dropped at the end.
set -euo pipefail
url=${1:?usage: scripts/settle-parts.sh URL [VERSION]}
cd "$(dirname "$0")/.."
migrations=postgres/src/main/resources/weir/postgres/migrations
v=${2:-$(ls "$migrations" | tail -1 | cut -c1-4)}
v=$((10#$v))
s=weir_parts_$v
P=(env PGOPTIONS="-c client_min_messages=warning" psql "$url" -q -At -v ON_ERROR_STOP=1)

. scripts/lib/settle.sh
scratch_schema "$s" "$v"


drain() { claims_and_completions "$s" gr; }

date -u '+%Y-%m-%d %H:%M UTC'
uptime
fan_graph "$s"
drain | "${P[@]}" >/dev/null
"${P[@]}" -c "DELETE FROM $s.tasks" -c "DELETE FROM $s.dependencies" -c "DELETE FROM $s.finished"
fan_graph "$s"
{
  echo "LOAD 'auto_explain';"
  echo "SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;"
  echo "SET auto_explain.log_analyze = on; SET auto_explain.log_timing = off; SET client_min_messages = log;"
  drain
} | psql "$url" -q -At -v ON_ERROR_STOP=1 2>&1 >/dev/null |
  awk '/duration: [0-9.]+ ms/ { match($0, /duration: [0-9.]+/); d = substr($0, RSTART + 10, RLENGTH - 10); want = 1; next }
       want && /Query Text:/ {
         sub(/.*Query Text: */, ""); want = 0
         if ($0 ~ /^[ \t]*$/) { blank = 1; next }
         k = substr($0, 1, 100)
         add() }
       blank { blank = 0; sub(/^[ \t]*/, ""); k = substr($0, 1, 100); add() }
       function add() {
         if (k ~ /^SELECT .claim/) ph = "claims"
         else { if (k ~ /^WITH d AS \(DELETE/) ncomp++; ph = (ncomp == 0 || (ncomp == 1 && k ~ /^WITH d AS \(DELETE/)) ? "root" : "rest" }
         t[ph "\t" k] += d; c[ph "\t" k]++ }
       END { for (k in t) printf "%10.1f ms %6d  %s\n", t[k], c[k], k }' | sort -rn
"${P[@]}" -c "DROP SCHEMA $s CASCADE"
