#!/usr/bin/env bash
# Installs (if missing) and starts Debian's PostgreSQL server on loopback, then prints a URL weir takes:
#   url=$(scripts/start-postgres.sh)      # postgresql://postgres:weir@127.0.0.1:5432/postgres
# Used by .ci/run for the suites' shared server and for lab runs against a real server.
# Needs root (apt-get, pg_ctlcluster); the server itself runs as the postgres user.
set -euo pipefail
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
read -r version cluster port _ < <(pg_lsclusters -h | head -n 1)
if [ -z "${version:-}" ]; then
  version=$(ls /usr/lib/postgresql | sort -n | tail -n 1)
  pg_createcluster "$version" main >&2
  read -r version cluster port _ < <(pg_lsclusters -h | head -n 1)
fi
pg_ctlcluster "$version" "$cluster" start >&2 2>/dev/null || pg_ctlcluster "$version" "$cluster" status >/dev/null
answering() {
  for _ in $(seq 1 50); do
    su postgres -c "psql -p $port -qAtc 'SELECT 1'" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
}
answering
# the test JVMs of two modules building side by side (mvn -T 1C) share it, each with its pools: more sessions
# than Debian's default of 100; the setting takes a restart, once
if [ "$(su postgres -c "psql -p $port -qAtc 'SHOW max_connections'")" -lt 300 ]; then
  su postgres -c "psql -p $port -qc 'ALTER SYSTEM SET max_connections = 300'" >&2
  pg_ctlcluster "$version" "$cluster" restart >&2
  answering
fi
su postgres -c "psql -p $port -qc \"ALTER USER postgres PASSWORD 'weir'\"" >&2
echo "postgresql://postgres:weir@127.0.0.1:$port/postgres"
