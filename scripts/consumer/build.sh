#!/usr/bin/env bash
# The release as a user meets it: a Maven project outside weir's reactor resolves weir's modules from the file
# repository that scripts/release/deploy-local.sh filled, and compiles every ```scala block of README.md
# against the dependencies README.md's ```xml blocks list, plus the modules pom.xml here adds. It fails when
#   - a block does not compile with those dependencies (README.md must list what its quick start needs),
#   - a weir artifact came from anywhere but REPO,
#   - a library resolved at another version than the weir module that brings it was built with (a user's Maven
#     takes the nearest version in the tree, not the pinned one of weir's root POM).
#   scripts/consumer/build.sh [REPO]    REPO defaults to target/release-repo; run after a build of the modules
# Its local repository holds everything ~/.m2 holds (linked, not copied) except weir's own artifacts
# (scripts/release/local-repo.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/select-jdk.sh
. scripts/lib/pom.sh

repo=$(realpath -m "${1:-target/release-repo}")
[ -d "$repo/dev/weir" ] || { echo "consumer: no weir artifacts in $repo: run scripts/release/deploy-local.sh first" >&2; exit 1; }
out=scripts/consumer/target
project=$out/project
rm -rf "$out"
mkdir -p "$project/src/main/scala"
. scripts/release/local-repo.sh
weir_local_repo "$out/m2"

# README.md's ```scala blocks, one file each
awk -v dir="$project/src/main/scala" '
  /^```scala[[:space:]]*$/ { n++; file = sprintf("%s/Readme%d.scala", dir, n); open = 1; next }
  /^```/ && open { open = 0; close(file); next }
  open { print > file }' README.md
blocks=$(find "$project/src/main/scala" -name 'Readme*.scala' | wc -l)
[ "$blocks" -gt 0 ] || { echo "consumer: README.md has no \`\`\`scala block" >&2; exit 1; }

# README.md's <dependency> elements, from its ```xml blocks, one line each, in place of the POM's marker
awk '/^```xml[[:space:]]*$/ { open = 1; next } /^```/ { open = 0 } open' README.md | tr -d ' \t\r\n' |
  sed 's#</dependency>#</dependency>\n#g' | grep -o '<dependency>.*</dependency>' >"$out/readme-dependencies.xml" ||
  { echo "consumer: README.md's \`\`\`xml blocks hold no <dependency>" >&2; exit 1; }
awk -v deps="$out/readme-dependencies.xml" '
  /<!-- README.md.s dependencies -->/ { while ((getline line < deps) > 0) print "    " line; next }
  { print }' scripts/consumer/pom.xml >"$project/pom.xml"
echo "consumer: README.md's $blocks scala block(s), against its dependencies"
sed -n 's#.*<artifactId>\(.*\)</artifactId><version>\(.*\)</version>.*#  \1:\2#p' "$out/readme-dependencies.xml"
echo "and scripts/consumer/pom.xml's"
sed -n 's#.*<groupId>dev.weir</groupId><artifactId>\([^<]*\)</artifactId>.*#  \1#p' scripts/consumer/pom.xml

# the release's version and Scala version, from the root POM
version=$(sed -n '/<artifactId>weir-parent<\/artifactId>/,/<\/version>/s#.*<version>\(.*\)</version>.*#\1#p' pom.xml)
scala=$(sed -n 's#.*<scala.version>\(.*\)</scala.version>.*#\1#p' pom.xml)
[ -n "$version" ] && [ -n "$scala" ] || { echo "consumer: no version or scala.version in pom.xml" >&2; exit 1; }

mvn -B -f "$project/pom.xml" -Dmaven.repo.local="$root/$out/m2" -Dweir.release.repo="file://$repo" \
  -Dweir.version="$version" -Dscala.version="$scala" compile
echo

# every weir artifact came from REPO: the local repository records where each came from
failed=0
for dir in "$out"/m2/dev/weir/*/*/; do
  grep -q '>weir-release=$' "$dir/_remote.repositories" ||
    { echo "consumer: ${dir#"$out"/m2/} did not come from $repo" >&2; failed=1; }
done

# every library at the version the weir module that brings it was built with: that module's third-party list
# (target/generated-sources/license, written by the build of the modules)
module_of() { # artifactId -> the folder of the module that builds it
  local pom
  for pom in */pom.xml; do
    if [ "$(pom_artifact_id "$pom")" = "$1" ]; then
      dirname "$pom"; return
    fi
  done
}
resolved=$(sed -n 's/^ *\([^: ]*\):\([^: ]*\):jar:\([^: ]*\):\(compile\|runtime\).*/\1:\2:\3/p' "$project/target/resolved.txt")
built=$(for a in $(echo "$resolved" | sed -n 's/^dev\.weir:\([^:]*\):.*/\1/p'); do
  m=$(module_of "$a")
  list=$m/target/generated-sources/license/THIRD-PARTY.txt
  [ -n "$m" ] && [ -f "$list" ] || { echo "consumer: no third-party list for $a (build the modules first)" >&2; exit 1; }
  sed 's/^ *//; s/ (.*//' "$list"
done | sort -u)
for lib in $(echo "$resolved" | grep -v '^dev\.weir:'); do
  ga=${lib%:*}
  want=$(echo "$built" | grep "^$ga:" | sed 's/.*://' | sort -u | paste -sd' ' -)
  if [ "$want" != "${lib##*:}" ]; then
    echo "consumer: resolved $lib, but weir's modules were built with ${want:-no $ga at all}" >&2
    failed=1
  fi
done
[ "$failed" = 0 ] || exit 1
echo "consumer: README.md compiled against $(echo "$resolved" | grep -c '^dev\.weir:') weir artifacts from $repo and" \
  "$(echo "$resolved" | grep -vc '^dev\.weir:') libraries, each at the version weir was built with"
