#!/usr/bin/env bash
# The servers the test suite's store tests need (tests/fixtures/databases.py), made to answer
# (Debian/Ubuntu, as root or via sudo): Redis on 127.0.0.1:6379 and PostgreSQL on
# 127.0.0.1:5432, where the `postgres` role may connect from loopback without a password and a
# database `test` exists. Installed through apt (`redis-server`, `postgresql`) when missing,
# started when not answering; quick and silent when both answer. `make run` needs neither.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 >/dev/null 2>&1; }
pg_ok() { psql -h 127.0.0.1 -p 5432 -U postgres -d test -tAc 'SELECT 1' >/dev/null 2>&1; }
wait_for() {  # a check, what it is; up to 30 s
  for _ in $(seq 1 300); do "$1" && return 0; sleep 0.1; done
  echo "setup-services: $2 did not come up" >&2
  exit 1
}

if command -v redis-cli >/dev/null 2>&1 && command -v psql >/dev/null 2>&1 \
    && redis_up && pg_ok; then
  exit 0
fi

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! redis_up; then
  echo "starting redis-server on 127.0.0.1:6379"
  $SUDO redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /tmp --logfile /tmp/sitekeep-redis.log
  wait_for redis_up "Redis"
fi

if ! pg_up; then
  version="$(ls /usr/lib/postgresql | sort -V | tail -1)"
  if ! pg_lsclusters -h 2>/dev/null | grep -q "^$version main "; then
    $SUDO pg_createcluster "$version" main >/dev/null
  fi
  echo "starting PostgreSQL $version on 127.0.0.1:5432"
  $SUDO pg_ctlcluster "$version" main start || true
  wait_for pg_up "PostgreSQL"
fi

if ! pg_ok; then
  hba="$(as_postgres psql -tAc 'SHOW hba_file')"
  if ! grep -q "sitekeep-tests" "$hba"; then
    echo "letting the postgres role in from loopback without a password (test machine)"
    $SUDO sed -i '1i host all postgres 127.0.0.1/32 trust  # sitekeep-tests' "$hba"
    as_postgres psql -qc 'SELECT pg_reload_conf()' >/dev/null
  fi
  if ! as_postgres psql -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1; then
    as_postgres createdb test
  fi
  wait_for pg_ok "PostgreSQL's test database"
fi
