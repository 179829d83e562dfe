#!/usr/bin/env bash
# Core throughput benchmark: pgcdc versus pg_recvlogical on the same logical-decoding backlog.
#
# Usage: scripts/bench.sh [--quick] [--keep] [--help]
#        scripts/bench.sh --delete-topics
#   --quick          100,000 rows (10 transactions of 10,000) instead of 1,000,000, for a smoke test
#   --keep           keep the bench database, slots and Kafka topic at the end (for inspection)
#   --delete-topics  delete every Kafka topic left by earlier runs (bench<stamp>.public.t), exit
#
# What it does (see bench/README.md):
#   1. starts the local services (scripts/services.sh start pg, start kafka) and builds target/release/pgcdc
#      when it is missing or older than the sources;
#   2. creates a fresh database with table t (bigint PK, int, numeric(12,2), text, timestamptz)
#      and a publication for it; creates a pgoutput slot for pg_recvlogical and copies it
#      (pg_copy_logical_replication_slot) into a second slot for pgcdc, so both start at the
#      same LSN;
#   3. loads BENCH_ROWS rows in transactions of BENCH_TX_ROWS rows while nothing consumes
#      the slots, and finds the exact end LSN of the last load transaction's commit record
#      (pg_walinspect);
#   4. drains slot 1 with pg_recvlogical --endpos=<that LSN> -f /dev/null: the ceiling;
#   5. starts pgcdc (snapshot.mode=no_data) on slot 2 and times it from process start until
#      slot 2's confirmed_flush_lsn reaches that LSN, i.e. until Kafka has acknowledged every
#      record (pgcdc confirms a transaction only after all its records are acked); checks that
#      the topic holds BENCH_ROWS records; records peak RSS and CPU; stops pgcdc with SIGTERM;
#   6. prints a report and writes it as JSON to target/bench/core-<date>.json (logs and
#      samples of the run in target/bench/core-<date>/), then drops slots, publication and
#      database, and deletes the run's Kafka topic (3.5 GB per million rows; BENCH_KEEP_TOPIC=1
#      keeps it) with bench/DeleteTopics.java, run by the JDK on the broker's own jars.
#
# Environment (defaults in brackets):
#   BENCH_ROWS [1000000]  BENCH_TX_ROWS [10000]       rows loaded, rows per transaction
#   BENCH_LINGER_MS [""]  BENCH_BATCH_SIZE [""]  BENCH_COMPRESSION [""]
#   BENCH_QUEUE_KBYTES [""]  BENCH_QUEUE_MESSAGES [""]
#                         producer.override.{linger.ms,batch.size,compression.type,
#                         queue.buffering.max.kbytes,queue.buffering.max.messages}; an empty
#                         value leaves the key unset (pgcdc's own default applies)
#   BENCH_STATUS_INTERVAL_MS [100]  status.update.interval.ms of pgcdc
#   BENCH_PARTITIONS [-1]           topic.creation.default.partitions (-1: broker default)
#   BENCH_SLOW_BROKER [""]          STOP_MS/RUN_MS: while pgcdc drains, the broker is paused
#                                   (SIGSTOP) for STOP_MS, then let run for RUN_MS, in turn, so
#                                   it cannot keep up and pgcdc's queues fill (e.g. 300/200)
#   BENCH_SET [""]                  extra pgcdc settings, whitespace-separated key=value
#                                   (e.g. "max.queue.size=16384 producer.override.acks=all")
#   BENCH_PG_SSLMODE [disable]      sslmode of both pg_recvlogical and pgcdc
#   BENCH_DB [pgcdc_bench]          database created (and dropped) by the bench
#   BENCH_TIMEOUT [900]             seconds allowed for each of: load, pg_recvlogical, pgcdc
#   BENCH_VERIFY [offsets]          offsets: count records by partition watermarks;
#                                   full: also consume the topic and count distinct keys
#   BENCH_PERF [0]                  1: perf record (BENCH_PERF_HZ [199] Hz, DWARF call graphs) the
#                                   pgcdc process while it streams
#                                   (adds overhead; report in target/bench/core-<date>/)
#   BENCH_NO_BUILD [0]              1: use target/release/pgcdc as it is, never build
#   BENCH_KEEP_TOPIC [0]            1: keep the run's Kafka topic
#   BENCH_SERVICES [start]          start: start pg and kafka with scripts/services.sh first;
#                                   running: use services already running at the addresses of
#                                   scripts/services.sh env (e.g. started from another checkout)
#   BENCH_KAFKA_LIB [target/services/kafka/lib]  the broker's jars, to delete topics
#   BENCH_WORKLOAD [core]           core: table t, one topic; outbox: an outbox table
#                                   (id uuid, aggregatetype of 10 values, aggregateid, type,
#                                   jsonb payload of ~500 B) read through the EventRouter into 10
#                                   topics (scripts/bench-outbox.sh runs both and compares)
#   BENCH_EXACTLY_ONCE [0]          1: exactly-once mode (exactly.once.source.support=enabled,
#                                   offsets in the topic <prefix>-offsets, 1 partition); Kafka
#                                   records are then counted by consuming read_committed
#                                   (watermarks also count transaction markers).
#                                   scripts/bench-eos.sh runs both modes and compares
#   BENCH_TRANSACTION_BOUNDARY [poll]  transaction.boundary in exactly-once mode
#   BENCH_CONVERTER [json]          json: JsonConverter with schemas; avro: Confluent's
#                                   AvroConverter for key and value, with the registry of
#                                   scripts/services.sh (started with BENCH_SERVICES=start); the
#                                   report counts pgcdc's registry calls
#   PGCDC_LOG [info]                pgcdc log filter
# shellcheck disable=SC2015  # "check && check || die" is intended: die exits
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"

usage() { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

QUICK=0
KEEP=0
DELETE_TOPICS_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --keep) KEEP=1 ;;
    --delete-topics) DELETE_TOPICS_ONLY=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done

if [ "$QUICK" = 1 ]; then ROWS=${BENCH_ROWS:-100000}; else ROWS=${BENCH_ROWS:-1000000}; fi
TX_ROWS=${BENCH_TX_ROWS:-10000}
LINGER_MS=${BENCH_LINGER_MS-}
BATCH_SIZE=${BENCH_BATCH_SIZE-}
COMPRESSION=${BENCH_COMPRESSION-}
QUEUE_KBYTES=${BENCH_QUEUE_KBYTES-}
QUEUE_MESSAGES=${BENCH_QUEUE_MESSAGES-}
STATUS_MS=${BENCH_STATUS_INTERVAL_MS:-100}
PARTITIONS=${BENCH_PARTITIONS:--1}
EXTRA_SET=${BENCH_SET:-}
SSLMODE=${BENCH_PG_SSLMODE:-disable}
DB=${BENCH_DB:-pgcdc_bench}
TIMEOUT=${BENCH_TIMEOUT:-900}
VERIFY=${BENCH_VERIFY:-offsets}
PERF=${BENCH_PERF:-0}
NO_BUILD=${BENCH_NO_BUILD:-0}
KEEP_TOPIC=${BENCH_KEEP_TOPIC:-0}
WORKLOAD=${BENCH_WORKLOAD:-core}
EOS=${BENCH_EXACTLY_ONCE:-0}
BOUNDARY=${BENCH_TRANSACTION_BOUNDARY:-poll}
CONVERTER=${BENCH_CONVERTER:-json}
SERVICES=${BENCH_SERVICES:-start}
KAFKA_LIB=${BENCH_KAFKA_LIB:-$ROOT/target/services/kafka/lib}
export PGCDC_LOG=${PGCDC_LOG:-info}

is_uint "$ROWS" && [ "$ROWS" -gt 0 ] || die "BENCH_ROWS=$ROWS: expected a positive integer"
is_uint "$TX_ROWS" && [ "$TX_ROWS" -gt 0 ] || die "BENCH_TX_ROWS=$TX_ROWS: expected a positive integer"
is_uint "$STATUS_MS" && [ "$STATUS_MS" -gt 0 ] || die "BENCH_STATUS_INTERVAL_MS=$STATUS_MS: expected a positive integer"
is_uint "$TIMEOUT" && [ "$TIMEOUT" -gt 0 ] || die "BENCH_TIMEOUT=$TIMEOUT: expected a positive integer"
[[ "$PARTITIONS" =~ ^(-1|[1-9][0-9]*)$ ]] || die "BENCH_PARTITIONS=$PARTITIONS: expected -1 or a positive integer"
[[ "$DB" =~ ^[a-z_][a-z0-9_]*$ ]] || die "BENCH_DB=$DB: use lower-case letters, digits and _"
case "$VERIFY" in offsets|full) ;; *) die "BENCH_VERIFY=$VERIFY: expected offsets or full" ;; esac
case "$SERVICES" in start|running) ;; *) die "BENCH_SERVICES=$SERVICES: expected start or running" ;; esac
case "$WORKLOAD" in core|outbox) ;; *) die "BENCH_WORKLOAD=$WORKLOAD: expected core or outbox" ;; esac
case "$EOS" in 0|1) ;; *) die "BENCH_EXACTLY_ONCE=$EOS: expected 0 or 1" ;; esac
case "$BOUNDARY" in poll|interval|connector) ;; *) die "BENCH_TRANSACTION_BOUNDARY=$BOUNDARY: expected poll, interval or connector" ;; esac
case "$CONVERTER" in json|avro) ;; *) die "BENCH_CONVERTER=$CONVERTER: expected json or avro" ;; esac
[ "$WORKLOAD" = core ] || [ "$VERIFY" = offsets ] || die "BENCH_VERIFY=full is for the core workload only"
case "$SSLMODE" in disable|allow|prefer|require) ;; *) die "BENCH_PG_SSLMODE=$SSLMODE: expected disable, allow, prefer or require" ;; esac

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$ROOT/target/bench"
RUN="$OUT/$WORKLOAD-$STAMP"
JSON="$OUT/$WORKLOAD-$STAMP.json"
SLOT_RECV=bench_recvlogical
SLOT_PGCDC=bench_pgcdc
PUB=bench_pub
TABLE=t
PREFIX="bench$STAMP"          # letters and digits: a valid topic.prefix
TOPIC="$PREFIX.public.$TABLE"
TOPICS=("$TOPIC")
TOPICS_REGEX="${TOPIC//./\\.}"
if [ "$WORKLOAD" = outbox ]; then
  TABLE=outbox
  TOPIC="$PREFIX.outbox.event.Aggregate0"
  TOPICS=()
  for i in 0 1 2 3 4 5 6 7 8 9; do TOPICS+=("$PREFIX.outbox.event.Aggregate$i"); done
  TOPICS_REGEX="$PREFIX\\.outbox\\.event\\..*"
fi
PGCDC="$ROOT/target/release/pgcdc"
TOPIC_REGEX='bench[0-9]{8}T[0-9]{6}Z(\.public\.t|\.outbox\.event\..*|-offsets)'
mkdir -p "$OUT"

# ---------------------------------------------------------------------------------------------
# Prerequisites, services, build
# ---------------------------------------------------------------------------------------------

[ "$DELETE_TOPICS_ONLY" = 1 ] || { mkdir -p "$RUN"; log "run directory: $RUN"; }
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
bench_services "$SERVICES"

if [ "$DELETE_TOPICS_ONLY" = 1 ]; then
  delete_topics "$TOPIC_REGEX"
  exit 0
fi

bench_tools
if [ "$PERF" = 1 ]; then command -v perf >/dev/null 2>&1 || die "BENCH_PERF=1 needs perf (linux-perf)"; fi

bench_build

CONN_BASE="host=$PG_HOST port=$PG_PORT user=$PG_USER sslmode=$SSLMODE"
BENCH_APP=pgcdc_bench   # application_name of q (bench-lib.sh)

# ---------------------------------------------------------------------------------------------
# Clean-up (also on failure / Ctrl-C)
# ---------------------------------------------------------------------------------------------

PGCDC_PID=""
TIME_PID=""
WAITER_PID=""
SAMPLER_PID=""
PERF_PID=""
RECV_PID=""

stop_pid() { # pid signal seconds: signal, wait up to seconds, then SIGKILL
  local pid=$1 sig=$2 secs=$3 deadline
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + secs ))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "pid $pid did not exit within ${secs}s of SIG$sig; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
}

# BENCH_SLOW_BROKER: pauses and resumes the broker in turn until killed.
THROTTLE_PID=""
throttle_broker() {
  local stop_s run_s
  stop_s=$(awk -v v="$1" 'BEGIN { split(v, a, "/"); printf "%.3f", a[1] / 1000 }')
  run_s=$(awk -v v="$1" 'BEGIN { split(v, a, "/"); printf "%.3f", a[2] / 1000 }')
  trap 'kill -CONT "$KAFKA_PID" 2>/dev/null; exit 0' TERM
  while :; do
    kill -STOP "$KAFKA_PID"; sleep "$stop_s"
    kill -CONT "$KAFKA_PID"; sleep "$run_s"
  done
}
stop_throttle() {
  [ -n "$THROTTLE_PID" ] || return 0
  stop_pid "$THROTTLE_PID" TERM 5
  THROTTLE_PID=""
  kill -CONT "$KAFKA_PID" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "$PERF_PID" ] && stop_pid "$PERF_PID" INT 30
  stop_throttle
  [ -n "$PGCDC_PID" ] && stop_pid "$PGCDC_PID" TERM 40
  [ -n "$TIME_PID" ] && stop_pid "$TIME_PID" TERM 5
  [ -n "$RECV_PID" ] && stop_pid "$RECV_PID" TERM 10
  [ -n "$WAITER_PID" ] && stop_pid "$WAITER_PID" TERM 5
  [ -n "$SAMPLER_PID" ] && stop_pid "$SAMPLER_PID" TERM 5
  if [ "$KEEP" = 1 ]; then
    log "--keep: leaving database $DB, slots $SLOT_RECV/$SLOT_PGCDC, publication $PUB and topic $TOPIC"
  else
    if [ "${BENCH_OBJECTS_CREATED:-0}" = 1 ]; then
      log "cleaning up: dropping slots, publication and database $DB"
      drop_bench_objects "$DB" "$PUB" "$SLOT_RECV" "$SLOT_PGCDC"
    fi
    if [ "${TOPIC_MAY_EXIST:-0}" = 1 ] && [ "$KEEP_TOPIC" != 1 ]; then
      delete_topics "$TOPICS_REGEX"
      [ "$EOS" != 1 ] || delete_topics "$PREFIX-offsets"
    fi
  fi
  [ "$rc" = 0 ] || log "FAILED (exit $rc); logs in $RUN"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# Database, publication, slots
# ---------------------------------------------------------------------------------------------

active=$(q postgres -c "SELECT string_agg(slot_name || ' (pid ' || active_pid || ')', ', ') FROM pg_replication_slots WHERE slot_name IN ('$SLOT_RECV', '$SLOT_PGCDC') AND active")
[ -z "$active" ] || die "slots in use, is another bench running? $active"
BENCH_OBJECTS_CREATED=1
drop_bench_objects "$DB" "$PUB" "$SLOT_RECV" "$SLOT_PGCDC"   # leftovers of an interrupted run

log "creating database $DB, table $TABLE, publication $PUB"
q postgres -c "CREATE DATABASE $DB"
q "$DB" <<SQL
CREATE EXTENSION pg_walinspect;
CREATE TABLE public.t (
  id bigint PRIMARY KEY,
  n integer NOT NULL,
  amount numeric(12,2) NOT NULL,
  label text NOT NULL,
  created_at timestamptz NOT NULL
);
SQL
[ "$WORKLOAD" = core ] || q "$DB" -f "$ROOT/migrations/002_outbox.sql"
q "$DB" -c "CREATE PUBLICATION $PUB FOR TABLE public.$TABLE"

log "creating slot $SLOT_RECV (pgoutput) and copying it to $SLOT_PGCDC"
q "$DB" -c "SELECT pg_create_logical_replication_slot('$SLOT_RECV', 'pgoutput')" >/dev/null
q "$DB" -c "SELECT pg_copy_logical_replication_slot('$SLOT_RECV', '$SLOT_PGCDC')" >/dev/null
slot_lsn() { q "$DB" -c "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$1'"; }
LSN_RECV_START=$(slot_lsn "$SLOT_RECV")
LSN_PGCDC_START=$(slot_lsn "$SLOT_PGCDC")
if [ "$LSN_RECV_START" = "$LSN_PGCDC_START" ]; then SLOTS_EQUAL=true; else SLOTS_EQUAL=false; fi
log "slot start LSNs: $SLOT_RECV=$LSN_RECV_START $SLOT_PGCDC=$LSN_PGCDC_START (equal: $SLOTS_EQUAL)"

# ---------------------------------------------------------------------------------------------
# Load (nothing consumes the slots meanwhile)
# ---------------------------------------------------------------------------------------------

NTX=$(( (ROWS + TX_ROWS - 1) / TX_ROWS ))
log "loading $ROWS rows: $NTX transactions of up to $TX_ROWS rows"
{
  echo "SET synchronous_commit = on;"   # every commit durable before the next: exact end LSN
  first=1
  for (( i = 0; i < NTX; i++ )); do
    last=$(( first + TX_ROWS - 1 )); [ "$last" -le "$ROWS" ] || last=$ROWS
    echo "BEGIN;"
    if [ "$WORKLOAD" = outbox ]; then
      # ~500 B of jsonb per event: an order with four lines and a note.
      echo "INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) SELECT gen_random_uuid(), 'Aggregate' || (g % 10), g::text, 'OrderPlaced', jsonb_build_object('orderId', g, 'customer', md5(g::text), 'currency', 'EUR', 'lines', (SELECT jsonb_agg(jsonb_build_object('sku', md5((g * 10 + l)::text), 'qty', l, 'price', (g % 997) / 10.0 + l)) FROM generate_series(1, 4) AS l), 'note', rpad(md5((g + 1)::text), 40, '.')) FROM generate_series($first, $last) AS g;"
    else
      echo "INSERT INTO public.$TABLE SELECT g, g % 1000, (g % 100000) / 100.0, md5(g::text), now() FROM generate_series($first, $last) AS g;"
    fi
    if [ "$i" = $(( NTX - 1 )) ]; then
      echo "$XID_MARKER_SQL"
    fi
    echo "COMMIT;"
    first=$(( last + 1 ))
  done
  echo "$END_MARKER_SQL"
} >"$RUN/load.sql"
t_load0=$(now)
timeout "$TIMEOUT" psql -X -q -At -v ON_ERROR_STOP=1 "$CONN_BASE dbname=$DB" -f "$RUN/load.sql" >"$RUN/load.out" \
  || die "load failed or took more than ${TIMEOUT}s (BENCH_TIMEOUT)"
LOAD_S=$(fsub "$(now)" "$t_load0")
# The exact end of the last load transaction's commit record: pgoutput's Commit end_lsn,
# which is what pg_recvlogical stops at and what pgcdc confirms once everything is acked.
load_end_lsn "$DB" "$RUN/load.out"
WAL_BYTES=$(q "$DB" -c "SELECT pg_wal_lsn_diff('$END_LSN', '$LSN_RECV_START')::bigint")
COUNT=$(q "$DB" -c "SELECT count(*) FROM public.$TABLE")
[ "$COUNT" = "$ROWS" ] || die "table holds $COUNT rows, expected $ROWS"
log "loaded in ${LOAD_S}s; last commit (xid $LAST_XID) ends at $END_LSN; pg_current_wal_lsn() $END_WAL_LSN; $WAL_BYTES WAL bytes since the slots"

# ---------------------------------------------------------------------------------------------
# Ceiling: pg_recvlogical drains slot 1 to /dev/null
# ---------------------------------------------------------------------------------------------

log "pg_recvlogical: draining $SLOT_RECV up to $END_LSN"
read -r host_total0 host_idle0 < <(host_cpu)
t_recv0=$(now)
set +e
timeout "$TIMEOUT" /usr/bin/time -v -o "$RUN/recvlogical.time" \
  pg_recvlogical -d "$CONN_BASE dbname=$DB application_name=bench_recvlogical" \
    --slot="$SLOT_RECV" --start --endpos="$END_LSN" --no-loop \
    -o proto_version=1 -o publication_names="$PUB" -f /dev/null 2>"$RUN/recvlogical.log" &
RECV_PID=$!
wait "$RECV_PID"; recv_rc=$?
set -e
t_recv1=$(now)
read -r host_total1 host_idle1 < <(host_cpu)
RECV_HOST_BUSY_S=$(host_busy_s "$host_total0" "$host_idle0" "$host_total1" "$host_idle1")
RECV_PID=""
[ "$recv_rc" = 0 ] || { cat "$RUN/recvlogical.log" >&2; die "pg_recvlogical failed (exit $recv_rc; 124 = timeout of ${TIMEOUT}s)"; }
RECV_S=$(fsub "$t_recv1" "$t_recv0")
RECV_RATE=$(fdiv "$ROWS" "$RECV_S")
RECV_USER=$(time_field "$RUN/recvlogical.time" "User time (seconds)")
RECV_SYS=$(time_field "$RUN/recvlogical.time" "System time (seconds)")
RECV_RSS_MIB=$(kib_to_mib "$(time_field "$RUN/recvlogical.time" "Maximum resident set size (kbytes)")")
log "pg_recvlogical: ${RECV_S}s, $RECV_RATE rows/s"

# ---------------------------------------------------------------------------------------------
# pgcdc on slot 2
# ---------------------------------------------------------------------------------------------

KAFKA_PID=$(scripts/services.sh kafka-pid kafka 2>/dev/null || true)

# The connector config.
producer_json=$(jq -n \
  --arg linger "$LINGER_MS" --arg batch "$BATCH_SIZE" --arg comp "$COMPRESSION" \
  --arg qkb "$QUEUE_KBYTES" --arg qmsg "$QUEUE_MESSAGES" '
  {"producer.override.linger.ms": $linger, "producer.override.batch.size": $batch,
   "producer.override.compression.type": $comp,
   "producer.override.queue.buffering.max.kbytes": $qkb,
   "producer.override.queue.buffering.max.messages": $qmsg}
  | with_entries(select(.value != ""))')
jq -n \
  --arg host "$PG_HOST" --arg port "$PG_PORT" --arg user "$PG_USER" --arg pw "$PGPASSWORD" \
  --arg db "$DB" --arg ssl "$SSLMODE" --arg slot "$SLOT_PGCDC" --arg pub "$PUB" \
  --arg table "public.$TABLE" --arg prefix "$PREFIX" --arg status "$STATUS_MS" \
  --arg offsets "$RUN/offsets.json" --arg kafka "$KAFKA" --arg parts "$PARTITIONS" \
  --argjson producer "$producer_json" '
  {name: "pgcdc-bench", config: ({
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "database.hostname": $host, "database.port": $port, "database.user": $user,
    "database.password": $pw, "database.dbname": $db, "database.sslmode": $ssl,
    "plugin.name": "pgoutput", "slot.name": $slot, "publication.name": $pub,
    "publication.autocreate.mode": "filtered", "table.include.list": $table,
    "topic.prefix": $prefix, "snapshot.mode": "no_data",
    "status.update.interval.ms": $status,
    "offset.storage.file.filename": $offsets,
    "bootstrap.servers": $kafka,
    "topic.creation.default.partitions": $parts
  } + $producer)}' >"$RUN/connector.json"
if [ "$WORKLOAD" = outbox ]; then
  jq --arg prefix "$PREFIX" '.config += {
    "transforms": "outbox",
    "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
    "transforms.outbox.route.topic.replacement": ($prefix + ".outbox.event.${routedByValue}")}' \
    "$RUN/connector.json" >"$RUN/connector.json.tmp" && mv "$RUN/connector.json.tmp" "$RUN/connector.json"
fi
if [ "$EOS" = 1 ]; then
  jq --arg prefix "$PREFIX" --arg boundary "$BOUNDARY" '.config |= (del(."offset.storage.file.filename") + {
    "exactly.once.source.support": "enabled", "transaction.boundary": $boundary,
    "offsets.storage.topic": ($prefix + "-offsets"), "offset.storage.partitions": "1"})' \
    "$RUN/connector.json" >"$RUN/connector.json.tmp" && mv "$RUN/connector.json.tmp" "$RUN/connector.json"
fi
if [ "$CONVERTER" = avro ]; then
  [ "$SERVICES" = running ] || "$ROOT/scripts/services.sh" start registry
  jq --arg url "$REGISTRY" '.config += {
    "key.converter": "io.confluent.connect.avro.AvroConverter", "key.converter.schema.registry.url": $url,
    "value.converter": "io.confluent.connect.avro.AvroConverter", "value.converter.schema.registry.url": $url}' \
    "$RUN/connector.json" >"$RUN/connector.json.tmp" && mv "$RUN/connector.json.tmp" "$RUN/connector.json"
fi
chmod 600 "$RUN/connector.json"   # holds the (local test) database password

SET_ARGS=()
read -r -a EXTRA_ARR <<<"$EXTRA_SET"
for kv in ${EXTRA_ARR[@]+"${EXTRA_ARR[@]}"}; do
  [[ "$kv" == *=* ]] || die "BENCH_SET: '$kv' is not key=value"
  SET_ARGS+=(--set "$kv")
done

# Waiter: one server-side loop that polls the slot every 20 ms and prints the server clock
# when confirmed_flush_lsn reaches the end LSN. It is connected and polling before pgcdc
# starts, so its own start-up is not timed, and it costs no process spawns while pgcdc runs.
start_slot_waiter "$DB" "$SLOT_PGCDC" "$END_LSN" "$TIMEOUT" bench_waiter "$RUN/waiter"

TOPIC_MAY_EXIST=1
read -r host_total0 host_idle0 < <(host_cpu)
kafka_ticks0=$( [ -n "$KAFKA_PID" ] && cpu_ticks "$KAFKA_PID" || echo 0)
kafka_wait0=$( [ -n "$KAFKA_PID" ] && runq_wait_ns "$KAFKA_PID" || echo 0)
log "pgcdc: starting on $SLOT_PGCDC, topic $TOPIC (log: $RUN/pgcdc.log)"
t_pgcdc0=$(now)
start_pgcdc "$RUN" "$RUN/connector.json" ${SET_ARGS[@]+"${SET_ARGS[@]}"}

# Sampler: once a second, pgcdc RSS and CPU, Kafka broker CPU, host busy %.
sampler() {
  local pid=$1 t0=$2 rss ticks kt tot idle ptot=$host_total0 pidle=$host_idle0
  printf 't_s\tpgcdc_rss_mib\tpgcdc_cpu_s\tkafka_cpu_s\thost_busy_pct\n'
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status" 2>/dev/null || echo "")
    ticks=$(cpu_ticks "$pid")
    kt=$( [ -n "$KAFKA_PID" ] && cpu_ticks "$KAFKA_PID" || echo 0)
    read -r tot idle < <(host_cpu)
    printf '%s\t%s\t%s\t%s\t%s\n' "$(fsub "$(now)" "$t0")" "$rss" "$(ticks_to_s "$ticks")" \
      "$(ticks_to_s $(( kt - kafka_ticks0 )))" \
      "$(awk -v t=$(( tot - ptot )) -v i=$(( idle - pidle )) 'BEGIN { if (t > 0) printf "%.0f", 100 * (t - i) / t; else print 0 }')"
    ptot=$tot; pidle=$idle
    sleep 1
  done
}
if [ -n "${BENCH_SLOW_BROKER:-}" ]; then
  [[ "$BENCH_SLOW_BROKER" =~ ^[0-9]+/[0-9]+$ ]] || die "BENCH_SLOW_BROKER must be STOP_MS/RUN_MS, e.g. 300/200"
  [ -n "$KAFKA_PID" ] || die "BENCH_SLOW_BROKER needs the local broker's pid (scripts/services.sh kafka-pid kafka)"
  log "broker paused and resumed in turn while pgcdc drains: $BENCH_SLOW_BROKER ms"
  throttle_broker "$BENCH_SLOW_BROKER" &
  THROTTLE_PID=$!
fi
if [ -n "$PGCDC_PID" ]; then
  sampler "$PGCDC_PID" "$t_pgcdc0" >"$RUN/samples.tsv" 2>/dev/null &
  SAMPLER_PID=$!
  if [ "$PERF" = 1 ]; then
    # DWARF unwinding: the release build and librdkafka have no frame pointers.
    perf record -F "${BENCH_PERF_HZ:-199}" --call-graph dwarf,16384 -p "$PGCDC_PID" -o "$RUN/perf.data" >"$RUN/perf.log" 2>&1 &
    PERF_PID=$!
  fi
fi

# Wait for whichever comes first: the slot reaching END_LSN, or pgcdc exiting.
set +e
wait -n -p FIRST "$WAITER_PID" "$TIME_PID"
set -e
if [ "${FIRST:-}" != "$WAITER_PID" ] || ! grep -qE '^[0-9]+\.[0-9]+$' "$RUN/waiter.out"; then
  tail -n 40 "$RUN/pgcdc.log" >&2 || true
  cat "$RUN/waiter.err" >&2 || true
  if [ "${FIRST:-}" = "$TIME_PID" ]; then die "pgcdc exited before Kafka acknowledged everything (log: $RUN/pgcdc.log)"; fi
  die "waiting for $SLOT_PGCDC to reach $END_LSN failed (see above)"
fi
WAITER_PID=""
stop_throttle
t_ack=$(tail -n 1 "$RUN/waiter.out")
PGCDC_S=$(fsub "$t_ack" "$t_pgcdc0")
PGCDC_RATE=$(fdiv "$ROWS" "$PGCDC_S")
log "pgcdc: last record acknowledged after ${PGCDC_S}s, $PGCDC_RATE events/s"

# Measurements at the moment of the last ack, before stopping anything.
[ -n "$PERF_PID" ] && { stop_pid "$PERF_PID" INT 60; PERF_PID=""; }
VMHWM_MIB=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$PGCDC_PID/status")
PGCDC_CPU_S=$(ticks_to_s "$(cpu_ticks "$PGCDC_PID")")
read -r host_total1 host_idle1 < <(host_cpu)
HOST_BUSY=$(awk -v t=$(( host_total1 - host_total0 )) -v i=$(( host_idle1 - host_idle0 )) 'BEGIN { if (t > 0) printf "%.0f", 100 * (t - i) / t; else print "null" }')
HOST_BUSY_S=$(host_busy_s "$host_total0" "$host_idle0" "$host_total1" "$host_idle1")
KAFKA_CPU_S=null; KAFKA_WAIT_S=null
if [ -n "$KAFKA_PID" ]; then
  KAFKA_CPU_S=$(ticks_to_s $(( $(cpu_ticks "$KAFKA_PID") - kafka_ticks0 )))
  KAFKA_WAIT_S=$(ns_to_s $(( $(runq_wait_ns "$KAFKA_PID") - kafka_wait0 )))
fi
PGCDC_WAIT_S=$(ns_to_s "$(runq_wait_ns "$PGCDC_PID")")
WALSENDER_PID=$(q "$DB" -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$SLOT_PGCDC'")
WALSENDER_CPU_S=null; WALSENDER_WAIT_S=null
if [ -n "$WALSENDER_PID" ]; then
  WALSENDER_CPU_S=$(ticks_to_s "$(cpu_ticks "$WALSENDER_PID")")
  WALSENDER_WAIT_S=$(ns_to_s "$(runq_wait_ns "$WALSENDER_PID")")
fi
# Busy cpu time of everything else on the host during the run (PostgreSQL backends, the waiter,
# the sampler, other users' work): a measure of interference.
OTHER_CPU_S=$(awk -v h="$HOST_BUSY_S" -v a="$PGCDC_CPU_S" -v b="$KAFKA_CPU_S" -v c="$WALSENDER_CPU_S" \
  'BEGIN { printf "%.2f", h - a - (b == "null" ? 0 : b) - (c == "null" ? 0 : c) }')
# Per thread name (tokio workers, librdkafka threads, ...), busiest first: cpu seconds, and
# seconds spent runnable but waiting for a cpu (/proc/.../schedstat), i.e. cpu starvation.
# Wall time minus both is time the thread was blocked (waiting for I/O, a queue, a timer).
threads_summary <(thread_stats "$PGCDC_PID") >"$RUN/threads.tsv"
THREADS_JSON=$(threads_json "$RUN/threads.tsv")

# Startup: process start -> "streaming started" in the log.
STARTUP_S=null; STREAM_RATE=null
ts=$(strip_ansi "$RUN/pgcdc.log" | awk '/streaming started/ && !seen { print $1; seen = 1 }')
if [ -n "$ts" ] && t_stream=$(date -d "$ts" +%s.%N 2>/dev/null); then
  STARTUP_S=$(fsub "$t_stream" "$t_pgcdc0")
  STREAM_RATE=$(fdiv "$ROWS" "$(fsub "$t_ack" "$t_stream")")
fi

# Kafka: records in the topic(s) = sum over topics and partitions of (high - low watermark);
# in exactly-once mode, the records a read_committed consumer reads (markers take offsets).
kafka_count() {
  local t total=0
  if [ "$EOS" = 1 ]; then
    for t in "${TOPICS[@]}"; do
      total=$(( total + $(kcat -C -b "$KAFKA" -X isolation.level=read_committed -t "$t" -o beginning -e -q -f 'x\n' | wc -l) ))
    done
    echo "$total"
    return
  fi
  watermark_records "${TOPICS[@]}"
}
KAFKA_RECORDS=$(kafka_count)
KAFKA_PARTITIONS=$(kcat -L -b "$KAFKA" -t "$TOPIC" -J -m 10 | jq '.topics[0].partitions | length')
# Size of a record: average key and value bytes over the last 1000 records of partition 0.
read -r AVG_KEY AVG_VALUE < <(kcat -C -b "$KAFKA" -t "$TOPIC" -p 0 -o -1000 -e -q -f '%K %S\n' \
  | awk '{ k += $1; v += $2; n++ } END { if (n) printf "%.0f %.0f\n", k / n, v / n; else print "null null" }')
DISTINCT_KEYS=null
if [ "$VERIFY" = full ]; then
  log "BENCH_VERIFY=full: consuming $TOPIC to count records and distinct keys"
  read -r CONSUMED DISTINCT_KEYS < <(kcat -C -b "$KAFKA" -t "$TOPIC" -o beginning -e -q -f '%k\n' \
    | sort | awk '{ n++; if ($0 != prev) d++; prev = $0 } END { print n + 0, d + 0 }')
  [ "$CONSUMED" = "$KAFKA_RECORDS" ] || log "WARNING: consumed $CONSUMED records, watermarks say $KAFKA_RECORDS"
fi
VERIFIED=false
if [ "$KAFKA_RECORDS" = "$ROWS" ] && { [ "$DISTINCT_KEYS" = null ] || [ "$DISTINCT_KEYS" = "$ROWS" ]; }; then
  VERIFIED=true
fi

# Stop pgcdc gracefully and collect its exit status and totals.
log "pgcdc: SIGTERM"
stop_pgcdc
[ -n "$SAMPLER_PID" ] && { wait "$SAMPLER_PID" 2>/dev/null || true; SAMPLER_PID=""; }
PEAK_RSS_MIB=$(kib_to_mib "$(time_field "$RUN/pgcdc.time" "Maximum resident set size (kbytes)")")
PGCDC_USER=$(time_field "$RUN/pgcdc.time" "User time (seconds)")
PGCDC_SYS=$(time_field "$RUN/pgcdc.time" "System time (seconds)")
PGCDC_WARN=$(strip_ansi "$RUN/pgcdc.log" | grep -c ' WARN ' || true)
PGCDC_ERR=$(strip_ansi "$RUN/pgcdc.log" | grep -cE ' ERROR |pgcdc: error' || true)
# Schema registry calls, from pgcdc's last log line ("stopped ... registry_calls=N").
REGISTRY_CALLS=$(strip_ansi "$RUN/pgcdc.log" | grep -o 'registry_calls=[0-9]*' | tail -n 1 | cut -d= -f2)
REGISTRY_CALLS=${REGISTRY_CALLS:-null}
RATIO=$(fratio "$PGCDC_RATE" "$RECV_RATE")

if [ "$PERF" = 1 ] && [ -s "$RUN/perf.data" ]; then
  # Flat profile per thread and symbol, then the same with callers (inclusive time).
  { perf report -i "$RUN/perf.data" --no-children --sort comm,dso,sym -g none --percent-limit 0.5 --stdio
    perf report -i "$RUN/perf.data" --children --sort comm,sym -g caller,0.5,callee,function,percent --percent-limit 3 --stdio
  } >"$RUN/perf.txt" 2>/dev/null || true
  log "perf profile: $RUN/perf.txt"
fi

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

GIT_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
GIT_DIRTY=$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null | wc -l | tr -d ' ')
BIN_MTIME=$(date -u -r "$PGCDC" +%Y-%m-%dT%H:%M:%SZ)
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
if host_was_busy "$LOADAVG_START"; then
  log "WARNING: load average was $LOADAVG_START at start on $(nproc) cpus: other work competed for the cpus, figures are pessimistic"
fi
extra_json=$(printf '%s\n' ${EXTRA_ARR[@]+"${EXTRA_ARR[@]}"} | jq -R -s 'split("\n") | map(select(length > 0))')

jq -n \
 --arg workload "$WORKLOAD" --arg date "$STAMP" --argjson rows "$ROWS" --argjson tx_rows "$TX_ROWS" --argjson ntx "$NTX" \
  --arg commit "$GIT_COMMIT" --argjson dirty "$GIT_DIRTY" --arg bin "$PGCDC" --arg bin_mtime "$BIN_MTIME" \
  --argjson cpus "$(nproc)" --arg loadavg "$LOADAVG" --arg loadavg0 "$LOADAVG_START" \
  --argjson producer "$producer_json" --argjson status "$STATUS_MS" --argjson parts_setting "$PARTITIONS" \
  --argjson extra "$extra_json" --arg ssl "$SSLMODE" \
  --arg lsn_recv "$LSN_RECV_START" --arg lsn_pgcdc "$LSN_PGCDC_START" --argjson equal "$SLOTS_EQUAL" \
  --arg end_lsn "$END_LSN" --arg end_wal "$END_WAL_LSN" --argjson wal_bytes "$(jnum "$WAL_BYTES")" \
  --argjson load_s "$(jnum "$LOAD_S")" \
  --argjson recv_s "$(jnum "$RECV_S")" --argjson recv_rate "$(jnum "$RECV_RATE")" \
  --argjson recv_user "$(jnum "$RECV_USER")" --argjson recv_sys "$(jnum "$RECV_SYS")" \
  --argjson recv_rss "$(jnum "$RECV_RSS_MIB")" \
  --argjson p_s "$(jnum "$PGCDC_S")" --argjson p_rate "$(jnum "$PGCDC_RATE")" \
  --argjson p_startup "$(jnum "$STARTUP_S")" --argjson p_stream_rate "$(jnum "$STREAM_RATE")" \
  --argjson p_rss "$(jnum "$PEAK_RSS_MIB")" --argjson p_hwm "$(jnum "$VMHWM_MIB")" \
  --argjson p_cpu_ack "$(jnum "$PGCDC_CPU_S")" --argjson p_user "$(jnum "$PGCDC_USER")" \
  --argjson p_sys "$(jnum "$PGCDC_SYS")" --argjson p_rc "$PGCDC_RC" \
  --argjson p_warn "$(jnum "$PGCDC_WARN")" --argjson p_err "$(jnum "$PGCDC_ERR")" \
  --argjson ws_cpu "$(jnum "$WALSENDER_CPU_S")" --argjson k_cpu "$(jnum "$KAFKA_CPU_S")" \
  --argjson host_busy "$(jnum "$HOST_BUSY")" --argjson threads "$THREADS_JSON" \
  --argjson host_busy_s "$(jnum "$HOST_BUSY_S")" --argjson other_s "$(jnum "$OTHER_CPU_S")" \
  --argjson recv_host_busy_s "$(jnum "$RECV_HOST_BUSY_S")" \
  --argjson p_wait "$(jnum "$PGCDC_WAIT_S")" --argjson ws_wait "$(jnum "$WALSENDER_WAIT_S")" \
  --argjson k_wait "$(jnum "$KAFKA_WAIT_S")" \
  --arg topic "$TOPIC" --argjson k_parts "$(jnum "$KAFKA_PARTITIONS")" \
  --argjson k_records "$(jnum "$KAFKA_RECORDS")" --argjson k_distinct "$(jnum "$DISTINCT_KEYS")" \
  --argjson verified "$VERIFIED" --arg eos "$EOS" --arg boundary "$BOUNDARY" \
  --argjson avg_key "$(jnum "$AVG_KEY")" --argjson avg_value "$(jnum "$AVG_VALUE")" \
  --arg converter "$CONVERTER" --argjson registry_calls "$(jnum "$REGISTRY_CALLS")" \
  --argjson ratio "$(jnum "$RATIO")" --arg run_dir "$RUN" '
{
  bench: $workload, date: $date, run_dir: $run_dir,
  workload: {rows: $rows, rows_per_transaction: $tx_rows, transactions: $ntx,
             table: (if $workload == "outbox" then "public.outbox (migrations/002_outbox.sql), 10 aggregate types, ~500 B jsonb payloads, EventRouter into 10 topics" else "public.t(id bigint pk, n int, amount numeric(12,2), label text, created_at timestamptz)" end)},
  pgcdc_build: {git_commit: $commit, uncommitted_source_files: $dirty, binary: $bin, binary_mtime: $bin_mtime},
  host: {cpus: $cpus, loadavg_at_start: $loadavg0, loadavg_at_end: $loadavg},
  settings: {producer: $producer, forced: {acks: "all", "enable.idempotence": "true"},
             status_update_interval_ms: $status, topic_creation_default_partitions: $parts_setting,
             snapshot_mode: "no_data", pg_sslmode: $ssl, extra_set: $extra,
             exactly_once: ($eos == "1"), transaction_boundary: (if $eos == "1" then $boundary else null end),
             converter: $converter},
  lsn: {recvlogical_slot_start: $lsn_recv, pgcdc_slot_start: $lsn_pgcdc, slots_equal: $equal,
        last_commit_end: $end_lsn, pg_current_wal_lsn_after_load: $end_wal, wal_bytes: $wal_bytes},
  load_seconds: $load_s,
  pg_recvlogical: {seconds: $recv_s, rows_per_s: $recv_rate, cpu_user_s: $recv_user,
                   cpu_sys_s: $recv_sys, max_rss_mib: $recv_rss,
                   host_busy_cpu_s_during: $recv_host_busy_s},
  pgcdc: {seconds_to_last_ack: $p_s, events_per_s: $p_rate,
          startup_seconds: $p_startup, events_per_s_after_startup: $p_stream_rate,
          peak_rss_mib: $p_rss, vmhwm_at_last_ack_mib: $p_hwm,
          cpu_s_at_last_ack: $p_cpu_ack, runqueue_wait_s_at_last_ack: $p_wait, cpu_user_s_total: $p_user, cpu_sys_s_total: $p_sys,
          exit_code: $p_rc, log_warnings: $p_warn, log_errors: $p_err, threads_cpu: $threads,
          registry_calls: $registry_calls},
  during_pgcdc_run: {walsender_cpu_s: $ws_cpu, walsender_runqueue_wait_s: $ws_wait,
                     kafka_broker_cpu_s: $k_cpu, kafka_broker_runqueue_wait_s: $k_wait,
                     host_busy_pct: $host_busy,
                     host_busy_cpu_s: $host_busy_s, other_processes_cpu_s: $other_s},
  kafka: {topic: $topic, partitions: $k_parts, records: $k_records, distinct_keys: $k_distinct,
          verified: $verified, avg_key_bytes: $avg_key, avg_value_bytes: $avg_value},
  ratio_pgcdc_to_pg_recvlogical: $ratio
}' >"$JSON"

fmt_producer=$(jq -r 'to_entries | map("\(.key | sub("producer.override."; ""))=\(.value)") | join(" ")' <<<"$producer_json")
cat <<EOF

=== pgcdc $WORKLOAD benchmark ($STAMP) ===
workload      $ROWS inserts, $NTX transactions x $TX_ROWS rows, table public.$TABLE; load took ${LOAD_S}s
slots         $SLOT_RECV starts at $LSN_RECV_START, $SLOT_PGCDC at $LSN_PGCDC_START (equal: $SLOTS_EQUAL)
end LSN       last commit ends at $END_LSN (pg_current_wal_lsn after load: $END_WAL_LSN); $WAL_BYTES WAL bytes
settings      producer: ${fmt_producer:-pgcdc defaults} (acks=all, idempotence forced)
              status.update.interval.ms=$STATUS_MS, partitions=$KAFKA_PARTITIONS, sslmode=$SSLMODE${EXTRA_SET:+, extra: $EXTRA_SET}
              delivery: $([ "$EOS" = 1 ] && echo "exactly-once (transaction.boundary=$BOUNDARY)" || echo "at-least-once"); converter: $CONVERTER$([ "$CONVERTER" = avro ] && echo " ($REGISTRY_CALLS schema registry calls)")
pgcdc build   $GIT_COMMIT (+$GIT_DIRTY uncommitted source files), binary $BIN_MTIME
host          $(nproc) cpus, load average $LOADAVG_START at start, $LOADAVG at end

pg_recvlogical  ${RECV_S}s  ->  $RECV_RATE rows/s   (ceiling; cpu ${RECV_USER}u+${RECV_SYS}s, rss ${RECV_RSS_MIB} MiB; host busy ${RECV_HOST_BUSY_S} cpu-s meanwhile)
pgcdc           ${PGCDC_S}s  ->  $PGCDC_RATE events/s  (process start -> last Kafka ack)
  after startup $STARTUP_S s startup, then $STREAM_RATE events/s
  ratio         pgcdc / pg_recvlogical = $RATIO
  peak RSS      $PEAK_RSS_MIB MiB (VmHWM at last ack: $VMHWM_MIB MiB)
  cpu           pgcdc ${PGCDC_CPU_S}s at last ack (${PGCDC_USER}u+${PGCDC_SYS}s incl. shutdown); walsender ${WALSENDER_CPU_S}s; kafka broker ${KAFKA_CPU_S}s
  cpu wait      runnable but waiting for a cpu: pgcdc threads ${PGCDC_WAIT_S}s, walsender ${WALSENDER_WAIT_S}s, kafka broker threads ${KAFKA_WAIT_S}s
                other processes ${OTHER_CPU_S}s; host busy ${HOST_BUSY}% of $(nproc) cpus
  threads       cpu s / waiting for a cpu s: $(head -n 4 "$RUN/threads.tsv" | awk -F'\t' '{ printf "%s%s(x%s) %s/%s", (NR > 1 ? ", " : ""), $1, $2, $3, $4 }')
  exit          $PGCDC_RC after SIGTERM; log: $PGCDC_WARN warnings, $PGCDC_ERR errors
kafka           ${#TOPICS[@]} topic(s) like $TOPIC: $KAFKA_RECORDS records (expected $ROWS; verified: $VERIFIED); avg key ${AVG_KEY} B, value ${AVG_VALUE} B
                (the topic is deleted on exit unless --keep or BENCH_KEEP_TOPIC=1)

report: $JSON
logs:   $RUN
EOF

[ "$VERIFIED" = true ] || die "Kafka holds $KAFKA_RECORDS records in $TOPIC, expected $ROWS"
[ "$PGCDC_RC" = 0 ] || die "pgcdc exited with $PGCDC_RC after SIGTERM"
