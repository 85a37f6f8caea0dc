# Sourced by scripts/release/deploy-local.sh and scripts/consumer/build.sh.
# weir_local_repo DIR: makes DIR a Maven local repository that holds everything ~/.m2 holds (a link to each
# top-level folder, and to each folder of dev/) except weir's own artifacts (dev/weir), so that a build using
# it neither finds weir jars left in ~/.m2 nor leaves any there. What Maven downloads meanwhile lands in ~/.m2,
# through the links.
weir_local_repo() {
  local dir=$1 m2=${WEIR_M2:-$HOME/.m2/repository} entry
  rm -rf "$dir"
  mkdir -p "$dir/dev"
  shopt -s nullglob
  for entry in "$m2"/*; do [ "${entry##*/}" = dev ] || ln -s "$entry" "$dir/"; done
  for entry in "$m2"/dev/*; do [ "${entry##*/}" = weir ] || ln -s "$entry" "$dir/dev/"; done
  shopt -u nullglob
}
