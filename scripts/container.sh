#!/usr/bin/env bash
# The container image, built from the repository's Dockerfile and tested with podman (no
# Docker engine or image registry needed).
#
# Usage: scripts/container.sh base | build | test | testcontainers | compose | all | clean
#   base            the base images the Dockerfile names, made locally from Debian packages:
#                   a bookworm minbase root file system (debootstrap, with ca-certificates and
#                   this machine's own CAs) imported as debian:bookworm-slim, and the same plus
#                   this machine's Rust toolchain as rust:1-bookworm. Root file systems are
#                   cached under target/containers/.
#   build           podman build --pull=never -t localhost/pgcdc:dev .
#   test            runs the image against scripts/services.sh's PostgreSQL and Kafka (host
#                   network): snapshot and stream as a non-root user, SIGTERM exits 0, a new
#                   container with no volume resumes from the offsets in Kafka without a new
#                   snapshot, a config error exits 78; prints the image size and start-up time
#   testcontainers  the Rust testcontainers recipe (examples/testcontainers) against podman's
#                   Docker-compatible API socket
#   compose         checks that docker-compose.yml names the versions the tests run
#   all             base, build, test, testcontainers, compose (what .ci/run runs)
#   clean           removes the test containers and stops the API socket
# Installs podman, runc and debootstrap when missing (Debian). Needs root (debootstrap, rootful
# podman). Waits poll with a timeout (PGCDC_CONTAINER_TIMEOUT seconds, default 180).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
STATE="$ROOT/target/containers"
TIMEOUT="${PGCDC_CONTAINER_TIMEOUT:-180}"
IMAGE=localhost/pgcdc:dev
MIRROR="${PGCDC_DEBIAN_MIRROR:-}"
SUITE=bookworm

log() { printf 'container: %s\n' "$*" >&2; }
die() { printf 'container: ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------------------------- podman
# On these machines crun fails (hybrid cgroups) and the default ulimits cannot be set.
podman_setup() {
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  command -v kcat >/dev/null 2>&1 || missing+=(kcat)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null \
      || { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null; } \
      || die "could not install ${missing[*]}"
  fi
  mkdir -p "$STATE"
  printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' >"$STATE/containers.conf"
  export CONTAINERS_CONF="$STATE/containers.conf"
}

# The Debian mirror apt uses on this machine (deb822 or one-line sources).
debian_mirror() {
  if [ -n "$MIRROR" ]; then echo "$MIRROR"; return; fi
  local m
  m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n 1)
  [ -n "$m" ] || m=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' | grep -v security | head -n 1)
  echo "${m:-http://deb.debian.org/debian}"
}

# ---------------------------------------------------------------------------------- base
# A bookworm minbase root file system, made once (target/containers/rootfs-bookworm.tar).
base_rootfs() {
  local tar="$STATE/rootfs-$SUITE.tar" dir="$STATE/rootfs-$SUITE" t0
  if [ -s "$tar" ]; then log "base: cached $tar"; return; fi
  t0=$(now)
  rm -rf "$dir"
  log "base: debootstrap --variant=minbase $SUITE from $(debian_mirror)"
  debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$dir" "$(debian_mirror)" \
      >"$STATE/debootstrap.log" 2>&1 \
    || { tail -n 20 "$STATE/debootstrap.log" >&2; die "debootstrap failed (log: $STATE/debootstrap.log)"; }
  # This machine's own trust anchors (a TLS-intercepting proxy's CA, a company CA), so that
  # cargo reaches crates.io from inside the build as it does outside.
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
    chroot "$dir" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the root file system"
  fi
  slim "$dir"
  tar -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf "$dir"
  log "base: root file system in $(elapsed "$t0")s ($(du -h "$tar" | cut -f1))"
}

# What Debian's slim images do to a root file system: no documentation, manual pages or
# translations (now or in later installs), no package lists or apt caches left behind.
slim() {
  local dir=$1
  cat >"$dir/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  cat >"$dir/etc/apt/apt.conf.d/slim" <<'EOF'
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
APT::Install-Recommends "false";
EOF
  find "$dir/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  rm -rf "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/var/lib/apt/lists/* \
    "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
  find "$dir/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
}

# The Rust toolchain this machine builds pgcdc with: its rustc and cargo, their libraries.
toolchain_dir() { dirname "$(dirname "$(rustup which cargo 2>/dev/null || command -v cargo)")"; }

cmd_base() {
  podman_setup
  base_rootfs
  local tar="$STATE/rootfs-$SUITE.tar" tc version rust_tar
  if ! podman image exists "docker.io/library/debian:$SUITE-slim"; then
    podman import "$tar" "docker.io/library/debian:$SUITE-slim" >/dev/null 2>"$STATE/import.log" \
      || { cat "$STATE/import.log" >&2; die "podman import failed"; }
    log "base: imported docker.io/library/debian:$SUITE-slim"
  fi
  tc=$(toolchain_dir)
  [ -x "$tc/bin/rustc" ] || die "no Rust toolchain found (rustup which cargo)"
  version=$("$tc/bin/rustc" --version | awk '{print $2}')
  rust_tar="$STATE/rust-$version-$SUITE.tar"
  if podman image exists "docker.io/library/rust:1-$SUITE" \
     && [ "$(podman image inspect --format '{{index .Config.Labels "rust.version"}}' "docker.io/library/rust:1-$SUITE" 2>/dev/null)" = "$version" ]; then
    log "base: docker.io/library/rust:1-$SUITE has Rust $version"
    return
  fi
  if [ ! -s "$rust_tar" ]; then
    # The root file system plus rustc and cargo under /usr/local/rust (no docs, no sources).
    cp "$tar" "$rust_tar.tmp"
    tar -C "$tc" --transform 's,^\./,usr/local/rust/,' -rf "$rust_tar.tmp" ./bin/cargo ./bin/rustc ./lib ./libexec
    mv "$rust_tar.tmp" "$rust_tar"
  fi
  podman import \
    --change 'ENV PATH=/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV CARGO_HOME=/usr/local/cargo' \
    --change "LABEL rust.version=$version" \
    "$rust_tar" "docker.io/library/rust:1-$SUITE" >/dev/null 2>"$STATE/import.log" \
    || { cat "$STATE/import.log" >&2; die "podman import failed"; }
  log "base: imported docker.io/library/rust:1-$SUITE (Rust $version)"
}

# ---------------------------------------------------------------------------------- build
cmd_build() {
  podman_setup
  local t0
  t0=$(now)
  log "build: podman build --pull=never -t $IMAGE (the repository's Dockerfile)"
  # --format docker keeps the Dockerfile's HEALTHCHECK (the OCI format has no place for it).
  podman build --pull=never --network host --format docker -t "$IMAGE" "$ROOT" >"$STATE/build.log" 2>&1 \
    || { tail -n 40 "$STATE/build.log" >&2; die "podman build failed (log: $STATE/build.log)"; }
  log "build: $IMAGE in $(elapsed "$t0")s, $(image_size) MiB"
  # The build stage's layers (2-3 GB) are not needed once the image exists.
  podman image prune -f >/dev/null 2>&1 || true
}

image_size() {
  podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.0f", $1 / 1048576 }'
}

# ---------------------------------------------------------------------------------- test
PG_PORT=54329
KAFKA=127.0.0.1:59092
TEST_DB=pgcdc_container
CT=pgcdc-ct

psql_t() { PGPASSWORD=postgres psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@"; }

topic_count() {
  timeout 30 kcat -C -b "$KAFKA" -t "$1" -o beginning -e -q -f '%o\n' 2>/dev/null | wc -l
}

# wait_count TOPIC N CONTAINER: until the topic holds N records while the container runs.
wait_count() {
  local deadline=$(( $(date +%s) + TIMEOUT )) have
  while :; do
    have=$(topic_count "$1")
    [ "$have" -ge "$2" ] && return 0
    [ "$(podman inspect --format '{{.State.Running}}' "$3" 2>/dev/null)" = true ] \
      || { podman logs "$3" 2>&1 | tail -n 20 >&2; die "container $3 exited while waiting for $2 records on $1"; }
    [ "$(date +%s)" -lt "$deadline" ] || { podman logs "$3" 2>&1 | tail -n 20 >&2; die "$1 has $have records after ${TIMEOUT}s, expected $2"; }
    sleep 0.2
  done
}

# podman_hc ARGS...: podman, without the errors it logs about the image's HEALTHCHECK timers
# on a machine without systemd (the health check itself runs: podman healthcheck run).
podman_hc() {
  podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2)
}

# run_pgcdc NAME ARGS...: a detached container of the image on the host network.
run_pgcdc() {
  local name=$1; shift
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman_hc run -d --name "$name" --network host -e PG_PASSWORD=postgres -v "$STATE/test:/config:ro" "$IMAGE" "$@" >/dev/null
}

stop_container() {
  podman_hc stop -t 40 "$1" >/dev/null
  local code
  code=$(podman inspect --format '{{.State.ExitCode}}' "$1")
  [ "$code" = 0 ] || { podman logs "$1" 2>&1 | tail -n 20 >&2; die "$1 exited $code after SIGTERM, expected 0"; }
}

cmd_test() {
  podman_setup
  podman image exists "$IMAGE" || die "no image $IMAGE (run: scripts/container.sh build)"
  "$ROOT/scripts/services.sh" start pg
  "$ROOT/scripts/services.sh" start kafka
  local prefix="ct$$" t0 start_ms uid
  mkdir -p "$STATE/test"
  psql_t -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null
  psql_t -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'pgcdc_container' AND NOT active" >/dev/null
  psql_t -d postgres -c "CREATE DATABASE $TEST_DB" >/dev/null
  psql_t -d "$TEST_DB" -c "CREATE TABLE items (id int PRIMARY KEY, v text); INSERT INTO items SELECT g, 'seed' FROM generate_series(1, 5) g" >/dev/null
  cat >"$STATE/test/connector.json" <<EOF
{
  "name": "$prefix",
  "config": {
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "database.hostname": "127.0.0.1",
    "database.port": "$PG_PORT",
    "database.user": "postgres",
    "database.password": "\${env:PG_PASSWORD}",
    "config.providers": "env",
    "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    "database.dbname": "$TEST_DB",
    "slot.name": "pgcdc_container",
    "table.include.list": "public.items",
    "topic.prefix": "$prefix",
    "bootstrap.servers": "$KAFKA",
    "offsets.storage.topic": "$prefix-offsets",
    "offset.storage.partitions": "1"
  }
}
EOF
  local topic="$prefix.public.items"
  # 1. Snapshot and stream, as a non-root user; SIGTERM exits 0.
  t0=$(now)
  run_pgcdc "$CT" run --config /config/connector.json
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until podman logs "$CT" 2>&1 | grep -q 'streaming started'; do
    [ "$(podman inspect --format '{{.State.Running}}' "$CT")" = true ] || { podman logs "$CT" 2>&1 | tail -n 20 >&2; die "the container exited during start-up"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "no 'streaming started' after ${TIMEOUT}s"
    sleep 0.05
  done
  start_ms=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%d", (b - a) * 1000 }')
  uid=$(podman exec "$CT" id -u)
  [ "$uid" != 0 ] || die "the container runs as root"
  # The image's REST API answers on port 8083 (the host network here): ready, and the
  # connector's task RUNNING as Kafka Connect shows it.
  curl -sf --max-time 5 http://127.0.0.1:8083/health/ready >/dev/null || die "GET /health/ready on the container's port 8083 did not answer 200"
  # The image's HEALTHCHECK (pgcdc health, the binary asking its own /health/ready).
  podman healthcheck run "$CT" >/dev/null || die "the image's HEALTHCHECK does not pass while the connector streams: $(podman exec "$CT" pgcdc health 2>&1)"
  local state
  state=$(curl -sf --max-time 5 "http://127.0.0.1:8083/connectors/$prefix/status" | jq -r '.tasks[0].state')
  [ "$state" = RUNNING ] || die "the container's task state is '$state', expected RUNNING"
  wait_count "$topic" 5 "$CT"
  psql_t -d "$TEST_DB" -c "INSERT INTO items VALUES (6, 'streamed')" >/dev/null
  wait_count "$topic" 6 "$CT"
  stop_container "$CT"
  podman_hc rm "$CT" >/dev/null
  log "test: snapshot + stream as uid $uid, SIGTERM exit 0; podman run to streaming in ${start_ms} ms"
  # 2. A new container (no volume) resumes from the offsets in Kafka: no second snapshot.
  psql_t -d "$TEST_DB" -c "INSERT INTO items VALUES (7, 'while stopped')" >/dev/null
  run_pgcdc "$CT" run --config /config/connector.json
  wait_count "$topic" 7 "$CT"
  podman logs "$CT" 2>&1 | grep -q 'snapshot started' && die "the new container took a snapshot again"
  [ "$(topic_count "$topic")" = 7 ] || die "$(topic_count "$topic") records on $topic, expected 7 (a second snapshot?)"
  stop_container "$CT"
  podman_hc rm "$CT" >/dev/null
  log "test: a new container resumed from the offsets in Kafka, no second snapshot"
  # 3. A config error exits 78, naming the key.
  local code out
  set +e
  out=$(podman run --rm --network host -e PG_PASSWORD=postgres -v "$STATE/test:/config:ro" "$IMAGE" run --config /config/connector.json --set snapshot.mode=sometimes 2>&1)
  code=$?
  set -e
  [ "$code" = 78 ] || die "a config error exited $code, expected 78: $out"
  printf '%s' "$out" | grep -q 'snapshot.mode=sometimes is invalid' || die "the config error does not name the key: $out"
  log "test: a config error exits 78"
  psql_t -d postgres -c "DROP DATABASE IF EXISTS $TEST_DB WITH (FORCE)" >/dev/null
  # (dropping the database dropped its inactive slot)
  echo "container test: ok; image $IMAGE $(image_size) MiB, podman run to streaming ${start_ms} ms"
}

# ---------------------------------------------------------------------------------- testcontainers
SOCK="$STATE/podman.sock"

api_start() {
  if curl -sf --unix-socket "$SOCK" http://d/v1.41/_ping >/dev/null 2>&1; then return; fi
  rm -f "$SOCK"
  setsid podman system service --time=0 "unix://$SOCK" </dev/null >"$STATE/api.log" 2>&1 &
  echo $! >"$STATE/api.pid"
  local deadline=$(( $(date +%s) + 60 ))
  until curl -sf --unix-socket "$SOCK" http://d/v1.41/_ping >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "podman's API socket did not answer (log: $STATE/api.log)"
    sleep 0.1
  done
}

api_stop() {
  [ -s "$STATE/api.pid" ] && kill "$(cat "$STATE/api.pid")" 2>/dev/null || true
  rm -f "$STATE/api.pid" "$SOCK"
}

cmd_testcontainers() {
  podman_setup
  podman image exists "$IMAGE" || die "no image $IMAGE (run: scripts/container.sh build)"
  "$ROOT/scripts/services.sh" start pg
  "$ROOT/scripts/services.sh" start kafka
  api_start
  log "testcontainers: examples/testcontainers against DOCKER_HOST=unix://$SOCK"
  DOCKER_HOST="unix://$SOCK" PGCDC_IMAGE="$IMAGE" CARGO_TARGET_DIR="$ROOT/target" \
    cargo test --quiet --manifest-path "$ROOT/examples/testcontainers/Cargo.toml" -- --nocapture
  api_stop
}

# ---------------------------------------------------------------------------------- compose
# docker-compose.yml is checked, not run: its images must be the versions the tests run.
cmd_compose() {
  local f="$ROOT/docker-compose.yml" pg_major kafka want_kafka
  pg_major=$(ls -d /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sed 's,.*/postgresql/\([0-9]*\)/.*,\1,' | sort -n | tail -n 1)
  want_kafka=$(sed -n 's/^KAFKA_VERSION="\${PGCDC_KAFKA_VERSION:-\([0-9.]*\)}"/\1/p' "$ROOT/scripts/services.sh")
  grep -q "image: postgres:$pg_major\$" "$f" || die "docker-compose.yml: PostgreSQL is not postgres:$pg_major, the version the tests run"
  kafka=$(sed -n 's/.*image: apache\/kafka:\([0-9.]*\).*/\1/p' "$f")
  [ "$kafka" = "$want_kafka" ] || die "docker-compose.yml: apache/kafka:$kafka, the tests run Kafka $want_kafka"
  grep -q 'wal_level=logical' "$f" || die "docker-compose.yml: PostgreSQL without wal_level=logical"
  grep -q 'POSTGRES_DB: loja' "$f" || die "docker-compose.yml: no database loja"
  grep -q './migrations:/docker-entrypoint-initdb.d' "$f" || die "docker-compose.yml: migrations/ not applied"
  grep -q 'config/pedidos-cdc.json' "$f" || die "docker-compose.yml: pgcdc does not run the seed config"
  [ -f "$ROOT/config/pedidos-cdc.json" ] || die "config/pedidos-cdc.json missing"
  log "compose: postgres:$pg_major and apache/kafka:$kafka as the tests run, seed config, migrations"
}

cmd_clean() {
  podman_setup
  podman rm -f "$CT" >/dev/null 2>&1 || true
  api_stop
}

case "${1:-}" in
  base) cmd_base ;;
  build) cmd_build ;;
  test) cmd_test ;;
  testcontainers) cmd_testcontainers ;;
  compose) cmd_compose ;;
  all) cmd_compose; cmd_base; cmd_build; cmd_test; cmd_testcontainers ;;
  clean) cmd_clean ;;
  *) sed -n '2,22p' "$0" >&2; exit 2 ;;
esac
