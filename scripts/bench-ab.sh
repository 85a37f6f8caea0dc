#!/usr/bin/env bash
# A/B of two or more benchmark jars on a machine whose speed drifts: one JMH fork per jar per round, the jars'
# order reversed every other round (A B, B A, A B, …), so that a drift over minutes falls on every jar alike;
# then, per row, each jar's scores over the rounds and the ratio of each jar to the first, round by round, with
# the median of those ratios (docs/lab/bench.md says why a ratio within a round is the figure to quote here).
#   scripts/bench-ab.sh ROUNDS NAME=JAR[@JVM-ARG] [NAME=JAR[@JVM-ARG] ...] -- JMH-ARGS
# A JVM-ARG after @ is given to that name's forks only (JMH's -jvmArgsPrepend), e.g. one jar on one compute
# thread and on two: one=/tmp/main.jar@-Dweir.bench.computeThreads=1 two=/tmp/main.jar@-Dweir.bench.computeThreads=2
# e.g. scripts/bench-ab.sh 6 main=/tmp/main.jar change=bench/target/benchmarks.jar -- 'BurstBench' \
#        -p tasks=plain,interruptible -wi 3 -i 5 -prof gc
# JMH-ARGS must not set -f, -rf or -rff. Output files go to target/bench-ab/ (the JSON of every run).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:?usage: scripts/bench-ab.sh ROUNDS NAME=JAR [NAME=JAR ...] -- JMH-ARGS}
shift
jars=()
# NAME=JAR pairs, each jar absolute (the runs go through ./weir, from the repository's root)
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    *=*)
      spec=${1#*=}
      jar=${spec%%@*}
      [ -f "$jar" ] || { echo "bench-ab: no jar at $jar (for ${1%%=*})" >&2; exit 2; }
      [[ "${1%%=*}" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "bench-ab: a NAME is letters, digits, . _ -; was: ${1%%=*}" >&2; exit 2; }
      for nj in "${jars[@]}"; do
        [ "${nj%%=*}" != "${1%%=*}" ] || { echo "bench-ab: the name ${1%%=*} is given twice" >&2; exit 2; }
      done
      ;;
    *) echo "bench-ab: expected NAME=JAR, got: $1" >&2; exit 2 ;;
  esac
  arg=""
  [ "$spec" = "$jar" ] || arg=${spec#*@}
  jars+=("${1%%=*}=$(realpath "$jar")@$arg")
  shift
done
[ "${1:-}" = "--" ] || { echo "bench-ab: JMH arguments follow --" >&2; exit 2; }
shift
[ ${#jars[@]} -ge 2 ] || { echo "bench-ab: give at least two NAME=JAR" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-ab: ROUNDS must be a positive integer, was: $rounds" >&2; exit 2; }
for a in "$@"; do
  case "$a" in -f | -rf | -rff) echo "bench-ab: JMH-ARGS must not set $a (one fork per jar per round)" >&2; exit 2 ;; esac
  if [ "$a" = -jvmArgsPrepend ]; then
    for nj in "${jars[@]}"; do
      [ -z "${nj#*@}" ] || { echo "bench-ab: -jvmArgsPrepend in JMH-ARGS would replace ${nj%%=*}'s @${nj#*@}" >&2; exit 2; }
    done
  fi
done

out=target/bench-ab
mkdir -p "$out"
rm -f "$out"/*.json
for r in $(seq 1 "$rounds"); do
  order=("${jars[@]}")
  if [ $((r % 2)) -eq 0 ]; then
    order=()
    for ((i = ${#jars[@]} - 1; i >= 0; i--)); do order+=("${jars[$i]}"); done
  fi
  for nj in "${order[@]}"; do
    name=${nj%%=*}
    echo "bench-ab: round $r/$rounds, $name ($(date -u +%H:%M:%S) UTC)" >&2
    spec=${nj#*=}
    jvm=()
    [ -z "${spec#*@}" ] || jvm=(-jvmArgsPrepend "${spec#*@}")
    WEIR_BENCH_JAR="${spec%%@*}" ./weir bench "$@" "${jvm[@]}" -f 1 -rf json -rff "$out/$r-$name.json" >"$out/$r-$name.log" 2>&1 ||
      { echo "bench-ab: the run failed; its output: $out/$r-$name.log" >&2; exit 1; }
  done
done
names=()
for nj in "${jars[@]}"; do names+=("${nj%%=*}"); done
python3 scripts/bench-ab-summary.py "$out" "$rounds" "${names[@]}"
