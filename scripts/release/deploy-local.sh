#!/usr/bin/env bash
# Deploys every published module, with its sources and scaladoc jars (the POM's `release` profile), to a
# file repository: what a release to a public repository would upload, kept on this machine.
#   scripts/release/deploy-local.sh [DIR]    DIR defaults to target/release-repo; emptied first
# A module is published unless its POM sets maven.deploy.skip (lab, bench): those are left out of the reactor
# rather than built and skipped. Nothing of weir's is installed or cached into ~/.m2 (its local repository is
# target/release-m2, scripts/release/local-repo.sh), so that no later build can take these jars from there.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/select-jdk.sh

repo=$(realpath -m "${1:-target/release-repo}")
unpublished=$(grep -l '<maven.deploy.skip>true</maven.deploy.skip>' -- */pom.xml | xargs -r -n1 dirname | sed 's/^/!/' | paste -sd, -)
rm -rf "$repo"
mkdir -p "$repo"
. scripts/release/local-repo.sh
weir_local_repo target/release-m2
# -DskipTests, not -Dmaven.test.skip: the downstream modules' test classpaths still need weir-core's test-jar
mvn -B -T 1C -Prelease deploy ${unpublished:+-pl "$unpublished"} -DskipTests -Dspotless.check.skip=true \
  -Dmaven.repo.local="$PWD/target/release-m2" -Dmaven.install.skip=true \
  -DaltDeploymentRepository="weir-release::file://$repo"
echo
echo "deployed to $repo:"
(cd "$repo" && find . -name '*.pom' | sed 's|^\./||; s|/[^/]*$||' | sort)
