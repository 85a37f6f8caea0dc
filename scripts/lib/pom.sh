# Sourced by the release and NOTICE scripts.
# pom_artifact_id POM: the module's own artifactId (the first after </parent>). One awk over the file, no pipe:
# under `set -o pipefail` a reader that stops at its first match (grep -m1, head) can break the pipe before the
# writer is done, and the SIGPIPE (exit 141) then fails the script depending on how the writes were buffered
pom_artifact_id() {
  awk '/<\/parent>/ { seen = 1; next }
       seen && match($0, /<artifactId>[^<]*/) { print substr($0, RSTART + 12, RLENGTH - 12); exit }' "$1"
}
