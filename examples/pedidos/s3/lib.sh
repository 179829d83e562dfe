# shellcheck shell=bash disable=SC2034
# Sourced by examples/pedidos/s3/*.sh: paths, ports and the process helpers (the same approach as
# scripts/debezium/lib.sh). Every wait polls with a timeout (SEED_S3_TIMEOUT seconds, default
# 180), never a fixed sleep.

ROOT=$(cd "$HERE/../../.." && pwd -P)
SEED="$ROOT/target/seed"
CONNECT_LIB="$ROOT/target/debezium/connect-lib"
PLUGINS="$SEED/plugins"
TIMEOUT="${SEED_S3_TIMEOUT:-180}"

KAFKA="${SEED_S3_KAFKA:-127.0.0.1:59092}"
S3_PORT=58090
S3_ENDPOINT="http://127.0.0.1:$S3_PORT"
S3_DATA="$SEED/s3-data"
S3_RUN="$SEED/s3proxy-run"
# The fixed test identity s3proxy accepts (aws-v2-or-v4 signatures); the same pair is in
# pedidos-to-s3.json.
S3_ACCESS_KEY=seed-access-key
S3_SECRET_KEY=seed-secret-key
S3_REGION=us-east-1
BUCKET="${SEED_S3_BUCKET:-data-lake-prod}"

REST_PORT=58093
CONNECT_RUN="$SEED/connect"
CONNECTOR_JSON="$HERE/pedidos-to-s3.json"
CONNECTOR=pedidos-to-s3
GROUP_ID=seed-s3-connect

log() { printf 's3-sink: %s\n' "$*" >&2; }
die() { printf 's3-sink: ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# port_open, live_pid, stop_pid, launch
# shellcheck source=../../../scripts/lib/process.sh
. "$ROOT/scripts/lib/process.sh"

s3proxy_pid() { live_pid "$S3_RUN/s3proxy.pid" "$S3_RUN/s3proxy.properties"; }
connect_pid() { live_pid "$CONNECT_RUN/connect.pid" "$CONNECT_RUN/worker.properties"; }
rest() { curl -sS --max-time 10 "$@"; }
