#!/usr/bin/env bash
# Differential run: Debezium 3.6.1.Final (Kafka Connect standalone, JsonConverter) and pgcdc on
# the same PostgreSQL database, same connector config and topic.prefix, each with its own slot,
# publication and Kafka broker; then tools/dbz-compare compares every record.
#
# Usage: scripts/debezium/run.sh [WORKLOAD]
#   WORKLOAD  a name under scripts/debezium/workloads/ (default: core) or a path prefix P, for
#             the files P-setup.sql (schema + snapshot rows, applied before the connectors start),
#             P-stream.sql (applied once both stream) and P-sentinel.sql (one row per table,
#             run in one final transaction that both sides must deliver on every topic).
# Environment:
#   PGCDC_BIN      pgcdc binary (default target/debug/pgcdc; built with `cargo build --bin pgcdc` if missing)
#   DBZ_KEEP=1     leave Connect, pgcdc, the broker, slots and database running/in place
#   DBZ_TIMEOUT    seconds for each wait (default 180)
#   DBZ_EXTRA_CONFIG  extra connector keys for both sides, as "k=v,k=v" (or one k=v per line)
#   DBZ_WAIT_SKIP     topics (an extended regex) not to wait for the sentinel on
#   DBZ_WAIT_ADD      topics (space-separated) to wait for as well
#   DBZ_TOPICS_3      topics (space-separated) to create with three partitions on both brokers
#   DBZ_PGCDC_SET     extra keys for pgcdc only (pgcdc's own keys, such as pgcdc.pgoutput.binary=true), "k=v,k=v"
#   DBZ_REST_COMPARE=1  also compare pgcdc's REST answers with the Connect worker's (rest-compare.sh)
# Output: the comparison table on stdout (also in target/debezium/run/report*.txt), every
# differing record pair in target/debezium/run/diffs.jsonl. Exit status: the comparer's
# (0 = every record identical after normalisation, 1 = differences, 2 = harness error).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

WORKLOAD=${1:-core}
case "$WORKLOAD" in
  */*) W="$WORKLOAD" ;;
  *) W="$ROOT/scripts/debezium/workloads/$WORKLOAD" ;;
esac
W=${W%.sql}; W=${W%-setup}
for part in setup stream sentinel; do
  [ -f "$W-$part.sql" ] || die "missing workload file $W-$part.sql"
done

T0=$(now)
phase() { log "[$(elapsed "$T0")s] $*"; }

# ------------------------------------------------------------------------------ prerequisites
phase "prerequisites"
"$ROOT/scripts/debezium/setup.sh"
# The workload uses PostGIS.
PGCDC_SERVICES_POSTGIS=1 "$ROOT/scripts/services.sh" start pg
"$ROOT/scripts/services.sh" start kafka
command -v curl >/dev/null 2>&1 || die "missing: curl"
if [ ! -x "$COMPARE" ] || [ -n "$(find "$ROOT/tools/dbz-compare/src" "$COMPARE_MANIFEST" -newer "$COMPARE" 2>/dev/null)" ]; then
  log "building tools/dbz-compare"
  CARGO_TARGET_DIR="$ROOT/target" cargo build --quiet --manifest-path "$COMPARE_MANIFEST"
fi
if [ ! -x "$PGCDC_BIN" ]; then
  log "building pgcdc (cargo build --bin pgcdc)"
  cargo build --quiet --bin pgcdc
fi

# ------------------------------------------------------------------------------ clean slate
cleanup() {
  local rc=$?
  if [ "${DBZ_KEEP:-0}" = 1 ]; then
    log "DBZ_KEEP=1: leaving Connect (REST 127.0.0.1:$DBZ_REST_PORT), pgcdc, the broker $DBZ_KAFKA, slots and database $DB; scripts/debezium/stop.sh removes them"
    exit "$rc"
  fi
  phase "cleanup"
  harness_cleanup
  phase "done (exit $rc)"
  exit "$rc"
}

phase "clean slate: database $DB, slots, topics $PREFIX.* on $PGCDC_KAFKA"
stop_all
drop_slots
rm -rf "$RUN"; mkdir -p "$RUN"
trap cleanup EXIT
sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
sql "CREATE DATABASE $DB" >/dev/null
"$COMPARE" delete-topics --brokers "$PGCDC_KAFKA" --prefix "$PREFIX" --prefix "__debezium-heartbeat.$PREFIX"
# Topics a pass's transforms spread over partitions (DBZ_TOPICS_3: space-separated) are created
# with three partitions on both brokers before the connectors start; every other topic keeps
# one, so records without a key (whose partition Kafka's producer picks at random) stay comparable.
create_partitioned() {
  [ -z "${DBZ_TOPICS_3:-}" ] && return 0
  local targs=(); for t in $DBZ_TOPICS_3; do targs+=(--topic "$t"); done
  "$COMPARE" create-topics --brokers "$1" --partitions 3 "${targs[@]}"
}
create_partitioned "$PGCDC_KAFKA"
phase "applying $(basename "$W")-setup.sql"
psql_db "$DB" -f "$W-setup.sql" >/dev/null

# ------------------------------------------------------------------------------ connectors
# One connector config for both sides. Only slot.name, publication.name (here: Debezium's) and the
# worker-level bootstrap.servers / offset.storage.file.filename differ; pgcdc gets those with --set.
# k=v entries of DBZ_EXTRA_CONFIG, separated by commas, or by newlines when a value itself holds
# a comma. A key given there replaces the default below.
kvs=()
if [ -n "${DBZ_EXTRA_CONFIG:-}" ]; then
  if [[ "$DBZ_EXTRA_CONFIG" == *$'\n'* ]]; then
    mapfile -t kvs < <(printf '%s\n' "$DBZ_EXTRA_CONFIG" | sed '/^[[:space:]]*$/d')
  else
    IFS=',' read -r -a kvs <<<"$DBZ_EXTRA_CONFIG"
  fi
fi
declare -A extra_keys=()
for kv in "${kvs[@]}"; do extra_keys["${kv%%=*}"]=1; done
defaults=(
  connector.class io.debezium.connector.postgresql.PostgresConnector
  tasks.max 1
  database.hostname "$PG_HOST"
  database.port "$PG_PORT"
  database.user "$PG_USER"
  database.password "$PG_PASSWORD"
  database.dbname "$DB"
  plugin.name pgoutput
  slot.name "$SLOT_DBZ"
  publication.name "$SLOT_DBZ"
  publication.autocreate.mode all_tables
  topic.prefix "$PREFIX"
  snapshot.mode initial
  schema.exclude.list postgis
  event.converting.failure.handling.mode warn
  skipped.operations none
  key.converter org.apache.kafka.connect.json.JsonConverter
  key.converter.schemas.enable true
  value.converter org.apache.kafka.connect.json.JsonConverter
  value.converter.schemas.enable true
  header.converter org.apache.kafka.connect.storage.SimpleHeaderConverter
)
{
  printf '{\n  "name": "%s",\n  "config": {\n' "$NAME"
  for ((i = 0; i < ${#defaults[@]}; i += 2)); do
    [ -n "${extra_keys[${defaults[i]}]:-}" ] || printf '    "%s": "%s",\n' "${defaults[i]}" "${defaults[i+1]}"
  done
  for kv in "${kvs[@]}"; do printf '    "%s": "%s",\n' "${kv%%=*}" "${kv#*=}"; done
  printf '    "name": "%s"\n  }\n}\n' "$NAME"
} >"$RUN/connector.json"

# The Avro pass: a config whose converters name the registry as @REGISTRY@ gets one fresh
# Apicurio Registry per side (both sides register the same subjects): Debezium's URL goes into
# the shared config, pgcdc's replaces it with --set. Both are in-memory, so each run starts empty.
registry_sets=() compare_registries=() wait_registries=()
if grep -q '@REGISTRY@' "$RUN/connector.json"; then
  DBZ_REGISTRY_URL="http://127.0.0.1:$REGISTRY_PORT_DBZ/apis/registry/v2"
  PGCDC_REGISTRY_URL="http://127.0.0.1:$REGISTRY_PORT_PGCDC/apis/registry/v2"
  # (stop_all, above, stopped the previous run's.)
  for side in dbz pgcdc; do
    port=$REGISTRY_PORT_DBZ; [ $side = pgcdc ] && port=$REGISTRY_PORT_PGCDC
    PGCDC_REGISTRY_PORT=$port PGCDC_REGISTRY_HOME="$DBZ/registry-$side" "$ROOT/scripts/services.sh" start registry
  done
  sed -i "s|@REGISTRY@|$DBZ_REGISTRY_URL|g" "$RUN/connector.json"
  for k in $(grep -o '"[a-z.]*converter\.apicurio\.registry\.url"' "$RUN/connector.json" | tr -d '"'); do
    registry_sets+=(--set "$k=$PGCDC_REGISTRY_URL")
  done
  compare_registries=(--registry-a "http://127.0.0.1:$REGISTRY_PORT_DBZ/apis/ccompat/v7"
                      --registry-b "http://127.0.0.1:$REGISTRY_PORT_PGCDC/apis/ccompat/v7")
  wait_registries=(--registry "debezium=http://127.0.0.1:$REGISTRY_PORT_DBZ/apis/ccompat/v7"
                   --registry "pgcdc=http://127.0.0.1:$REGISTRY_PORT_PGCDC/apis/ccompat/v7")
fi

pgcdc_sets=()
if [ -n "${DBZ_PGCDC_SET:-}" ]; then
  IFS=',' read -r -a kvs <<<"$DBZ_PGCDC_SET"
  for kv in "${kvs[@]}"; do pgcdc_sets+=(--set "$kv"); done
fi
phase "starting pgcdc ($PGCDC_BIN${DBZ_PGCDC_SET:+, $DBZ_PGCDC_SET}) -> $PGCDC_KAFKA"
PGCDC_PID=$(PGCDC_LOG=info launch "$RUN/pgcdc.pid" "$RUN/pgcdc.log" \
  "$PGCDC_BIN" run --config "$RUN/connector.json" "${pgcdc_sets[@]}" "${registry_sets[@]}" \
    --set slot.name="$SLOT_PGCDC" --set publication.name="$SLOT_PGCDC" \
    --set bootstrap.servers="$PGCDC_KAFKA" \
    --set offset.storage.file.filename="$RUN/pgcdc-offsets.json" \
    --listeners "http://127.0.0.1:$PGCDC_REST_PORT")
log "pgcdc: pid $PGCDC_PID, log $RUN/pgcdc.log"

phase "starting the Debezium side: broker $DBZ_KAFKA, Kafka Connect + Debezium"
broker_start_fresh
create_partitioned "$DBZ_KAFKA"
connect_start "$RUN/connector.json"


slot_active() { [ "$(sql "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$1' AND active")" = 1 ]; }

connect_wait_running "$NAME"
deadline=$(( $(date +%s) + TIMEOUT ))
dbz_ok=0 pgcdc_ok=0
until [ $dbz_ok = 1 ] && [ $pgcdc_ok = 1 ]; do
  if [ $dbz_ok = 0 ] && grep -q 'Processing messages' "$CONNECT_RUN/logs/connect.log" 2>/dev/null && slot_active "$SLOT_DBZ"; then
    dbz_ok=1; phase "Debezium is streaming (slot $SLOT_DBZ active)"
  fi
  if [ $pgcdc_ok = 0 ] && grep -q 'streaming started' "$RUN/pgcdc.log" 2>/dev/null && slot_active "$SLOT_PGCDC"; then
    pgcdc_ok=1; phase "pgcdc is streaming (slot $SLOT_PGCDC active)"
  fi
  kill -0 "$PGCDC_PID" 2>/dev/null || { tail -n 30 "$RUN/pgcdc.log" >&2; die "pgcdc exited (log: $RUN/pgcdc.log)"; }
  connect_pid >/dev/null || { tail -n 30 "$CONNECT_RUN/logs/connect.log" >&2; die "Kafka Connect exited"; }
  if rest "/connectors/$NAME/status" 2>/dev/null | grep -q '"state":"FAILED"'; then
    rest "/connectors/$NAME/status" | sed 's/\\n/\n/g' | head -n 30 >&2; die "Debezium connector FAILED"
  fi
  [ "$(date +%s)" -lt "$deadline" ] || die "not streaming after ${TIMEOUT}s (debezium=$dbz_ok pgcdc=$pgcdc_ok; logs: $CONNECT_RUN/logs/connect.log, $RUN/pgcdc.log)"
  sleep 0.2
done

if [ "${DBZ_REST_COMPARE:-0}" = 1 ]; then
  phase "comparing pgcdc's REST API with Kafka Connect's"
  "$ROOT/scripts/debezium/rest-compare.sh" "http://127.0.0.1:$DBZ_REST_PORT" "http://127.0.0.1:$PGCDC_REST_PORT" "$NAME" | tee "$RUN/rest-compare.txt" \
    || die "pgcdc's REST answers differ from Kafka Connect's ($RUN/rest-compare.txt)"
fi

# ------------------------------------------------------------------------------ workload
phase "applying $(basename "$W")-stream.sql"
psql_db "$DB" -f "$W-stream.sql" >/dev/null
# A workload may wait for something before its sentinel (P-wait.sh, sourced here).
if [ -f "$W-wait.sh" ]; then
  # shellcheck source=/dev/null
  . "$W-wait.sh"
fi

phase "sentinel transaction ($(basename "$W")-sentinel.sql + a logical message)"
XID=$({
  echo 'BEGIN;'
  echo 'SELECT (pg_current_xact_id()::text::bigint % 4294967296) AS sentinel_xid \gset'
  cat "$W-sentinel.sql"
  echo "SELECT pg_logical_emit_message(true, 'dbz-diff-sentinel', 'end') \\g /dev/null"
  echo 'COMMIT;'
  echo '\echo :sentinel_xid'
} | psql_db "$DB" -tA -f - | tail -n 1)
[[ "$XID" =~ ^[0-9]+$ ]] || die "could not read the sentinel transaction id (got '$XID')"
# The data topics as topic.naming.strategy names them (schema left out by the Default
# strategies, '_' escaped by the Unicode ones).
strategy=$(printf '%s\n' "${kvs[@]}" | sed -n 's/^topic\.naming\.strategy=io\.debezium\.schema\.//p')
part() { case "$strategy" in *Unicode*) echo "replace($1, '_', '_u005f')" ;; *) echo "$1" ;; esac; }
case "$strategy" in
  Default*) topic_sql="'$PREFIX.' || $(part c.relname)" ;;
  *) topic_sql="'$PREFIX.' || $(part n.nspname) || '.' || $(part c.relname)" ;;
esac
mapfile -t TOPICS < <(psql_db "$DB" -tAc "SELECT DISTINCT $topic_sql
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND n.nspname NOT LIKE 'pg\_%' AND n.nspname NOT LIKE 'Quoted%' AND n.nspname NOT IN ('postgis', 'pgcdc')
    AND c.relname <> 't_outbox' ORDER BY 1")
TOPICS+=("$PREFIX.message")
# A pass whose transforms route tables' records elsewhere names the topics not to wait for (an
# extended regex) and the topics to wait for instead (space-separated).
if [ -n "${DBZ_WAIT_SKIP:-}" ]; then
  mapfile -t TOPICS < <(printf '%s\n' "${TOPICS[@]}" | grep -Ev "^(${DBZ_WAIT_SKIP})\$")
fi
for t in ${DBZ_WAIT_ADD:-}; do TOPICS+=("$t"); done
phase "waiting for transaction $XID on ${#TOPICS[@]} topics on both sides"
targs=(); for t in "${TOPICS[@]}"; do targs+=(--topic "$t"); done
"$COMPARE" wait --side "debezium=$DBZ_KAFKA" --side "pgcdc=$PGCDC_KAFKA" --txid "$XID" --timeout "$TIMEOUT" "${targs[@]}" "${wait_registries[@]}" \
  || die "the sentinel did not arrive everywhere (logs: $CONNECT_RUN/logs/connect.log, $RUN/pgcdc.log)"

# ------------------------------------------------------------------------------ compare
phase "comparing (normalisation as in docs/debezium-harness.md)"
{
  echo "pgcdc: $PGCDC_BIN (built $(date -u -r "$PGCDC_BIN" +%FT%TZ)), repository HEAD $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "debezium: debezium-connector-postgres $(cat "$PLUGINS/.complete" | cut -d: -f2), Kafka Connect $(ls "$CONNECT_LIB" | sed -n 's/^connect-runtime-\(.*\)\.jar$/\1/p'), $(java -version 2>&1 | head -n 1)"
  echo "workload: $(basename "$W")-{setup,stream,sentinel}.sql"
} | tee "$RUN/report-header.txt"
set +e
DELIBERATE="$(dirname "$W")/../deliberate.tsv"
"$COMPARE" compare --a "debezium=$DBZ_KAFKA" --b "pgcdc=$PGCDC_KAFKA" --prefix "$PREFIX" "${compare_registries[@]}" \
  --deliberate "$DELIBERATE" --dump "$RUN/diffs.jsonl" --json-out "$RUN/summary.json" | tee "$RUN/report.txt"
RC=${PIPESTATUS[0]}
"$COMPARE" compare --a "debezium=$DBZ_KAFKA" --b "pgcdc=$PGCDC_KAFKA" --prefix "$PREFIX" "${compare_registries[@]}" --strict-source --deliberate "$DELIBERATE" \
  --dump "$RUN/diffs-strict.jsonl" --json-out "$RUN/summary-strict.json" >"$RUN/report-strict.txt"
cat "$RUN/report-header.txt" "$RUN/report.txt" >"$RUN/report.tmp" && mv "$RUN/report.tmp" "$RUN/report.txt"
cat "$RUN/report-header.txt" "$RUN/report-strict.txt" >"$RUN/report.tmp" && mv "$RUN/report.tmp" "$RUN/report-strict.txt"
set -e
log "strict-source comparison (streaming txId/lsn/sequence/ts kept): $(grep '^records compared' "$RUN/report-strict.txt") -> $RUN/report-strict.txt"
if [ "${DBZ_REST_COMPARE:-0}" = 1 ]; then
  phase "comparing pgcdc's answers to state changes with Kafka Connect's (the records are compared already)"
  "$ROOT/scripts/debezium/rest-compare.sh" "http://127.0.0.1:$DBZ_REST_PORT" "http://127.0.0.1:$PGCDC_REST_PORT" "$NAME" changes | tee -a "$RUN/rest-compare.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || { log "ERROR: pgcdc's answers to state changes differ from Kafka Connect's ($RUN/rest-compare.txt)"; RC=1; }
fi
phase "finished: comparer exit $RC"
exit "$RC"
