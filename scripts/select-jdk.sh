# Sourced by ./weir and .ci/run: exports JAVA_HOME as a JDK >= 21, preferring 25.
# Order: $JAVA_HOME if it is >= 21, then the JDKs Debian keeps under /usr/lib/jvm (newest first).
java_major() { "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p'; }
weir_select_jdk() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && [ "$(java_major "$JAVA_HOME")" -ge 21 ] 2>/dev/null; then
    return 0
  fi
  local candidate best="" best_major=0 major
  for candidate in /usr/lib/jvm/*; do
    [ -x "$candidate/bin/javac" ] || continue
    major=$(java_major "$candidate") || continue
    if [ "${major:-0}" -gt "$best_major" ] 2>/dev/null; then best=$candidate; best_major=$major; fi
  done
  if [ "$best_major" -lt 21 ]; then
    echo "weir needs a JDK >= 21 (25 preferred); none found in JAVA_HOME or /usr/lib/jvm" >&2
    return 1
  fi
  export JAVA_HOME=$best
}
weir_select_jdk || exit 1
export PATH="$JAVA_HOME/bin:$PATH"
