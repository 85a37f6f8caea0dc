#!/usr/bin/env bash
# What the JVM's ahead-of-time cache (JDK >= 25) does for a lambda that is Serializable, as every Scala
# function literal is, and for one that is not (docs/adr/0020-launcher-aot-cache.md, "What the cache cannot
# hold"). Generates a Java program whose main first runs 300 serializable lambdas (so that the JDK's lambda
# machinery is no longer cold), then times 100 more serializable ones and 100 plain ones, each a call site
# of its own; records the cache with one run, then runs it RUNS times with the cache and once without.
#   scripts/aot-lambdas.sh [RUNS]     (default 3; needs a JDK >= 25, picked like ./weir picks it)
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/select-jdk.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

# one static method of N call sites, each a lambda of its own (`cast` chooses serializable or not)
method() {
  local name=$1 n=$2 offset=$3 cast=$4 i
  echo "  static int $name(int x) {"
  for ((i = 0; i < n; i++)); do echo "    x = (($cast) (y -> y + $((i + offset)))).applyAsInt(x);"; done
  echo "    return x;"
  echo "  }"
}
{
  echo "import java.io.Serializable;"
  echo "import java.util.function.IntUnaryOperator;"
  echo "public class Lambdas {"
  for k in 0 1 2; do method "warm$k" 100 $((k * 100)) "IntUnaryOperator & Serializable"; done
  method serializable 100 1000 "IntUnaryOperator & Serializable"
  method plain 100 2000 "IntUnaryOperator"
  cat <<'EOF'
  public static void main(String[] args) {
    long t0 = System.nanoTime();
    int r = warm0(1) + warm1(1) + warm2(1);
    long t1 = System.nanoTime();
    r += serializable(1);
    long t2 = System.nanoTime();
    r += plain(1);
    long t3 = System.nanoTime();
    System.out.printf("first 300 serializable %.1f ms, next 100 serializable %.1f ms, 100 plain %.1f ms (%d)%n",
        (t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6, r);
  }
}
EOF
} >Lambdas.java
"$JAVA_HOME/bin/javac" Lambdas.java
"$JAVA_HOME/bin/jar" cf lambdas.jar ./*.class
"$JAVA_HOME/bin/java" -XX:AOTCacheOutput=lambdas.aot -cp lambdas.jar Lambdas >/dev/null 2>&1
for ((i = 1; i <= runs; i++)); do
  echo "with the cache:    $("$JAVA_HOME/bin/java" -XX:AOTCache=lambdas.aot -cp lambdas.jar Lambdas)"
done
echo "without the cache: $("$JAVA_HOME/bin/java" -cp lambdas.jar Lambdas)"
