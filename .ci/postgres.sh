# shellcheck shell=bash
# Sourced by .ci/run: starts a throw-away PostgreSQL on a free loopback port, exports
# CRM_TEST_POSTGRES for the tests, and stops it (and deletes its files) when the shell exits.
# A later `trap ... EXIT` in the caller replaces ours: chain it the same way, or call
# crm_ci_postgres_stop from it.

# Server binaries: Debian keeps them off PATH, under /usr/lib/postgresql/<version>/bin.
crm_ci_postgres_bindir() {
  local d
  while read -r d; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done < <(echo /usr/lib/postgresql/15/bin; printf '%s\n' /usr/lib/postgresql/*/bin | sort -rV)
  # e.g. /usr/local/bin/initdb, a symlink into the real version directory.
  d=$(command -v initdb 2>/dev/null) || return 1
  d=$(dirname "$(readlink -f "$d")")
  [ -x "$d/pg_ctl" ] && echo "$d"
}

# initdb and the server refuse to run as root; run them as the postgres OS user, from a
# directory it can read so they do not complain about the caller's working directory.
crm_ci_as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

crm_ci_postgres_stop() {
  # Keep the exit status the shell is leaving with, for any trap chained after us.
  local rc=$?
  if [ -n "${CRM_CI_PG_BASE:-}" ]; then
    crm_ci_as_postgres "$CRM_CI_PG_BIN/pg_ctl" -D "$CRM_CI_PG_BASE/data" -m fast -w stop \
      >/dev/null 2>&1 || true
    rm -rf "$CRM_CI_PG_BASE" || true
    CRM_CI_PG_BASE=
  fi
  return "$rc"
}

crm_ci_postgres_start() {
  # Sourced twice in one shell: keep the first server rather than leak it.
  if [ -n "${CRM_CI_PG_BASE:-}" ]; then return 0; fi

  if ! CRM_CI_PG_BIN=$(crm_ci_postgres_bindir); then
    echo "PostgreSQL server not found; installing it" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq postgresql >/dev/null || return 1
    CRM_CI_PG_BIN=$(crm_ci_postgres_bindir) || { echo "no initdb after install" >&2; return 1; }
  fi
  if [ "$(id -u)" -eq 0 ] && ! id -u postgres >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin postgres
  fi

  CRM_CI_PG_BASE=$(mktemp -d)
  # Registered before anything can fail, so a half-started server is cleaned up too. The
  # caller's EXIT trap, if any, still runs after ours (`trap -p` gives it back quoted).
  local prev
  prev=$(trap -p EXIT)
  eval "set -- $prev"
  # shellcheck disable=SC2064 # expanded now on purpose: the previous trap's text
  trap "crm_ci_postgres_stop; ${3:-}" EXIT

  local base=$CRM_CI_PG_BASE
  [ "$(id -u)" -ne 0 ] || chown postgres: "$base"
  crm_ci_as_postgres "$CRM_CI_PG_BIN/initdb" -D "$base/data" -U postgres --auth=trust \
    -E UTF8 --locale=C --no-sync >"$base/initdb.log" 2>&1 \
    || { cat "$base/initdb.log" >&2; return 1; }

  # TLS as well as plain connections: a throw-away CA and a server certificate for 127.0.0.1
  # it signs (verifiers refuse a CA certificate used as the server's own). The tests get the
  # CA as CRM_TEST_POSTGRES_CA: a store opened with sslmode=require must verify against it.
  {
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=crm-ci-postgres-ca" \
      -keyout "$base/ca.key" -out "$base/ca.crt" &&
      openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$base/server.key" -out "$base/server.csr" &&
      printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
        >"$base/server.ext" &&
      openssl x509 -req -in "$base/server.csr" -CA "$base/ca.crt" -CAkey "$base/ca.key" \
        -CAcreateserial -days 2 -extfile "$base/server.ext" -out "$base/server.crt"
  } >"$base/openssl.log" 2>&1 || { cat "$base/openssl.log" >&2; return 1; }
  chmod 0600 "$base/server.key"
  [ "$(id -u)" -ne 0 ] || chown postgres: "$base/server.key" "$base/server.crt"

  # A port free now may be taken before the server binds it (another job doing the same):
  # pick again when that is why it failed.
  local port attempt
  for attempt in 1 2 3; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null) \
      || port=$((49152 + RANDOM % 16000))
    if crm_ci_as_postgres "$CRM_CI_PG_BIN/pg_ctl" -D "$base/data" -l "$base/log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$base -c fsync=off -c max_connections=200 -c ssl=on -c ssl_cert_file=$base/server.crt -c ssl_key_file=$base/server.key" \
      start >/dev/null; then
      break
    fi
    if [ "$attempt" -eq 3 ] || ! grep -q 'already in use' "$base/log"; then
      echo "PostgreSQL did not start; its log:" >&2
      cat "$base/log" >&2
      return 1
    fi
  done

  "$CRM_CI_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres \
    -d postgres -c 'create database crm_test' || return 1
  export CRM_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/crm_test"
  export CRM_TEST_POSTGRES_CA="$base/ca.crt"
  # The host verifies a database's certificate whenever TLS is used (sslmode=prefer included),
  # so the hosts the tests start trust this CA as an operator's would.
  export CRM_HOST_STORE_CA="$base/ca.crt"
  # The chaos test starts (and stops) a server of its own with the same binaries.
  export CRM_TEST_PG_BIN="$CRM_CI_PG_BIN"
  echo "PostgreSQL $("$CRM_CI_PG_BIN/pg_ctl" --version | awk '{print $3}') at $CRM_TEST_POSTGRES (files in $base)"
}

crm_ci_postgres_start
