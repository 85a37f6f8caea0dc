#!/usr/bin/env bash
# weir-bench smoke run, for CI: builds benchmarks.jar and runs every benchmark once, one short
# measurement iteration, no warm-up, in this JVM (no fork: every benchmark's fork adds only the flag this
# JVM is started with, and a JVM per benchmark cost most of the run). It proves the harness builds and
# that every benchmark runs to completion (a failing benchmark fails the script: -foe true), one after
# another in one JVM, so a benchmark that leaks threads or state into the next shows too; its numbers are
# cold-JIT noise and must not be quoted. The measured runs are described in docs/lab/bench.md.
#
#   bench/smoke.sh                 build, then run all benchmarks (about 1 minute of JMH on 2 cores)
#   bench/smoke.sh 'WeirBench'     build, then run only the benchmarks matching a JMH regexp
#   SMOKE_SKIP_BUILD=1 bench/smoke.sh   reuse bench/target/benchmarks.jar
#
# Exact JMH command: java -Djmh.ignoreLock=true --sun-misc-unsafe-memory-access=allow
#                    -jar bench/target/benchmarks.jar -f 0 -wi 0 -i 1 -r 200ms -to 60s -foe true [regexp]
# (-Djmh.ignoreLock: JMH refuses to start while another JMH holds /tmp/jmh.lock, e.g. someone's measured
# run on a shared machine; a smoke run's numbers mean nothing, so it need not wait for the lock.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/select-jdk.sh

if [ -z "${SMOKE_SKIP_BUILD:-}" ]; then
  echo "bench/smoke.sh: building bench (mvn -pl bench -am package)..."
  mvn -B -q -pl bench -am package -DskipTests -Dspotless.check.skip=true
fi

jar=bench/target/benchmarks.jar
[ -f "$jar" ] || { echo "bench/smoke.sh: $jar is missing" >&2; exit 1; }

start=$(date +%s)
# hard stop in case a runtime wedges in a way JMH's own timeout (-to) cannot interrupt
timeout --kill-after=15s 900 \
  java -Djmh.ignoreLock=true --sun-misc-unsafe-memory-access=allow -jar "$jar" \
    -f 0 -wi 0 -i 1 -r 200ms -to 60s -foe true "$@"
echo "bench/smoke.sh: JMH took $(( $(date +%s) - start )) s"
