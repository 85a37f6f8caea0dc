#!/usr/bin/env bash
# NOTICE names every third-party asset that weir's artifacts bundle or serve, with its license (ADR 0042):
#   - each library inside a shaded jar listed in scripts/notice/shaded-jars: its module's third-party list
#     (target/generated-sources/license/THIRD-PARTY.txt, license-maven-plugin) and the Maven descriptors found
#     in the jar itself,
#   - each WebJar a published module depends on (weir-console serves uPlot's to the browser),
#   - each file of a published module's jar outside weir's own packages (none so far),
# and NOTICE names no library that nothing bundles or serves. Every jar carries NOTICE itself (META-INF/NOTICE).
# Run after a build that packaged the modules (`./weir test` does). Fails naming each line to add or remove.
#   scripts/notice/check.sh              check
#   scripts/notice/check.sh --expected   print the library lines NOTICE should hold, sorted
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/pom.sh

notice=NOTICE
version=$(sed -n '/<artifactId>weir-parent<\/artifactId>/,/<\/version>/s#.*<version>\(.*\)</version>.*#\1#p' pom.xml)
modules=$(sed -n 's#.*<module>\(.*\)</module>.*#\1#p' pom.xml)
artifact_of() { pom_artifact_id "$1/pom.xml"; }
published() { ! grep -q '<maven.deploy.skip>true</maven.deploy.skip>' "$1/pom.xml"; }
list_of() {
  local list=$1/target/generated-sources/license/THIRD-PARTY.txt
  [ -f "$list" ] || { echo "notice: $list is missing: build the modules first (./weir test)" >&2; exit 1; }
  sed 's/^ *//; /^$/d' "$list"
}
library_line='^[^ :]+:[^ :]+:[^ :]+ \(.+\)$'

# what NOTICE must name: (line, why) pairs, tab-separated
expected=$(
  grep -v '^#' scripts/notice/shaded-jars | while read -r module jar; do
    [ -n "$module" ] || continue
    list_of "$module" | sed "s|\$|\tbundled in ${jar##*/}|"
  done
  for m in $modules; do
    published "$m" || continue
    list_of "$m" | grep '^org\.webjars' | sed "s|\$|\tserved by $(artifact_of "$m")|" || true
  done
)
if [ "${1:-}" = --expected ]; then
  echo "$expected" | cut -f1 | sort -u
  exit 0
fi

failed=0
fail() { echo "notice: $*" >&2; failed=1; }
named=$(sed 's/^ *//' "$notice" | grep -E "$library_line" | sort -u)
expected_lines=$(cut -f1 <<<"$expected" | sort -u)

# every expected line is in NOTICE, and NOTICE names nothing unexpected (here-strings, not pipes into grep -q:
# a grep that stops at its first match would break the pipe, which pipefail reports as a failure)
while IFS=$'\t' read -r line why; do
  grep -qxF "$line" <<<"$named" || fail "NOTICE lacks '$line' ($why)"
done <<<"$expected"
while read -r line; do
  [ -n "$line" ] || continue
  grep -qxF "$line" <<<"$expected_lines" || fail "NOTICE names '$line', which no artifact bundles or serves"
done <<<"$named"

# the shaded jars: every Maven-built library the jar holds is named (catches what a third-party list could miss)
grep -v '^#' scripts/notice/shaded-jars | while read -r module jar; do
  [ -n "$module" ] || continue
  [ -f "$jar" ] || { echo "notice: $jar is missing: build it first" >&2; exit 1; }
  unzip -Z1 "$jar" | grep '^META-INF/maven/.*/pom.properties$' | grep -v '^META-INF/maven/dev\.weir/' |
    while read -r props; do
      gav=$(unzip -p "$jar" "$props" | tr -d '\r' |
        awk -F= '/^groupId=/{g=$2} /^artifactId=/{a=$2} /^version=/{v=$2} END{print g ":" a ":" v}')
      grep -qF -- "$gav (" <<<"$named" || echo "notice: ${jar##*/} holds $gav, which NOTICE does not name" >&2
    done
done 2>&1 | { grep . >&2 && exit 1 || exit 0; } || failed=1

# every jar carries NOTICE as it is; a published jar holds no file but compiled classes, weir's own resources
# and Maven's descriptors, unless NOTICE names the file (a script, a style sheet, a font copied from elsewhere)
for m in $modules; do
  jars=()
  if published "$m"; then jars+=("$m/target/$(artifact_of "$m")-$version.jar"); fi
  while read -r module jar; do [ "$module" = "$m" ] && jars+=("$jar"); done < <(grep -v '^#' scripts/notice/shaded-jars)
  for jar in "${jars[@]}"; do
    [ -f "$jar" ] || { fail "$jar is missing: build the modules first"; continue; }
    unzip -p "$jar" META-INF/NOTICE | cmp -s - "$notice" || fail "${jar##*/}'s META-INF/NOTICE is not NOTICE"
  done
  if published "$m" && [ -f "${jars[0]}" ]; then
    while read -r entry; do
      grep -qF "$entry" "$notice" || fail "${jars[0]##*/} holds $entry, which is not weir's, and NOTICE does not name it"
    done < <(unzip -Z1 "${jars[0]}" |
      grep -vE '/$|\.(class|tasty)$|^weir/|^META-INF/(MANIFEST\.MF|LICENSE|NOTICE)$|^META-INF/maven/dev\.weir/')
  fi
done

[ "$failed" = 0 ] || { echo "notice: scripts/notice/check.sh --expected prints the library lines NOTICE should hold" >&2; exit 1; }
echo "notice: NOTICE names the $(cut -f1 <<<"$expected" | sort -u | wc -l) libraries that weir's jars bundle or serve"
