#!/usr/bin/env bash
# Initial snapshot throughput: one COPY (the floor of one reader), four COPYs over ctid ranges,
# pgcdc (target/release/pgcdc) and Debezium 3.6.1.Final's PostgreSQL connector on Kafka
# Connect, each with snapshot.max.threads 1 and 4, JSON and Avro, one after the other on the
# same table (never concurrently). Also scripts/bench-compare.sh's `snapshot` workload.
#
# Usage: scripts/bench-snapshot.sh [--quick | --smoke] [--help]
#   --quick   200,000 rows instead of 2,000,000
#   --smoke   5,000 rows, every system and mode (fails when a count is wrong, never because the
#             machine is slow)
#
# The table is scripts/bench.sh's bulk table (id bigint primary key, n int, amount
# numeric(12,2), label text, created_at timestamptz), loaded once into a fresh database
# (pgcdc_snapbench), vacuumed and checkpointed. Then, one after the other:
#   1. COPY (SELECT * FROM t) TO STDOUT by psql into /dev/null, timed from launch to exit;
#   2. four such COPYs at once, each over a quarter of the table's pages (ctid ranges);
#   3. for each converter (JsonConverter with schemas; Avro with the schema registry of
#      scripts/services.sh, Apicurio's converter in Confluent mode on Debezium's side) and each
#      thread count: pgcdc with snapshot.mode=initial_only, timed from process start until its
#      topic holds every row; pgcdc with snapshot.mode=initial (system pgcdc-initial: a new
#      slot, the table read in its physical order by TID range scans, with a checkpoint that
#      waits for Kafka's acknowledgements every offset.flush.interval.ms, 10 s), timed the same
#      way and then stopped (SIGTERM); then Debezium (snapshot.mode=initial_only, the same
#      snapshot.max.threads) on a standalone Connect worker started once (REST
#      127.0.0.1:58184, JVM -Xms256m -Xmx2g), timed from POST /connectors until its topic holds
#      every row;
#   4. pgcdc streaming (snapshot.mode=no_data) while a session commits 1,000 single-row updates
#      per second to random rows of t; after 5 s an execute-snapshot signal (signal table)
#      starts an incremental snapshot of t: its rows/s (signal to completion), and the stream's
#      latency from commit to the broker (the topic's LogAppendTime minus source.ts_ms) in the
#      5 s before the signal and during the snapshot.
# Reported for each: seconds, rows/s, the process's cpu seconds and µs of cpu per row (pgcdc:
# GNU time's user+sys; Debezium: the Connect JVM's growth over the run), peak RSS (Debezium: the
# JVM's VmHWM, reset before each run), the broker's cpu seconds, and the host's busy cpu seconds
# (PostgreSQL's backends are in there). Ratios pgcdc/Debezium at equal threads and converter,
# and pgcdc (Avro, 4 threads) against one COPY, and pgcdc-initial / pgcdc (what resumability
# costs). Report on stdout and in
# target/bench/snapshot-<UTC stamp>.json, logs in target/bench/snapshot-<stamp>/. Slots,
# database, topics and the Connect worker are removed at the end, also on failure and Ctrl-C.
#
# Environment (defaults in brackets):
#   BENCH_SNAPSHOT_ROWS        rows of the table, overriding the mode's size
#   BENCH_SNAPSHOT_THREADS     ["1 4"]           snapshot.max.threads values
#   BENCH_SNAPSHOT_CONVERTERS  ["json avro"]     converters
#   BENCH_SNAPSHOT_SYSTEMS     ["pgcdc pgcdc-initial debezium"]
#   BENCH_SNAPSHOT_UPDATES_PER_S [1000]  the updates while the incremental snapshot runs (0: skip it)
#   BENCH_CONNECT_HEAP ["-Xms256m -Xmx2g"], BENCH_TIMEOUT [900], BENCH_NO_BUILD [0],
#   BENCH_PGCDC_BIN [target/release/pgcdc], BENCH_SERVICES [start]: as in scripts/bench-compare.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
# shellcheck source=scripts/debezium/lib.sh
. "$ROOT/scripts/debezium/lib.sh"
# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"
log() { printf 'bench-snapshot: %s\n' "$*" >&2; }
die() { printf 'bench-snapshot: ERROR: %s\n' "$*" >&2; exit 1; }
unset PGOPTIONS

usage() { sed -n '2,/^[^#]/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
MODE=default
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;;
    --smoke) MODE=smoke ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
case "$MODE" in default) ROWS=2000000 ;; quick) ROWS=200000 ;; smoke) ROWS=5000 ;; esac
ROWS=${BENCH_SNAPSHOT_ROWS:-$ROWS}
read -r -a THREADS <<<"${BENCH_SNAPSHOT_THREADS:-1 4}"
read -r -a CONVERTERS <<<"${BENCH_SNAPSHOT_CONVERTERS:-json avro}"
read -r -a SYSTEMS <<<"${BENCH_SNAPSHOT_SYSTEMS:-pgcdc pgcdc-initial debezium}"
read -r -a CONNECT_HEAP <<<"${BENCH_CONNECT_HEAP:--Xms256m -Xmx2g}"
UPDATES_PER_S=${BENCH_SNAPSHOT_UPDATES_PER_S:-1000}
RUN_TIMEOUT=${BENCH_TIMEOUT:-900}
NO_BUILD=${BENCH_NO_BUILD:-0}
SERVICES=${BENCH_SERVICES:-start}
KAFKA_LIB=${BENCH_KAFKA_LIB:-$ROOT/target/services/kafka/lib}
PGCDC="${BENCH_PGCDC_BIN:-$ROOT/target/release/pgcdc}"
{ is_uint "$ROWS" && [ "$ROWS" -gt 0 ]; } || die "BENCH_SNAPSHOT_ROWS=$ROWS: expected a positive integer"
for t in "${THREADS[@]}"; do { is_uint "$t" && [ "$t" -ge 1 ]; } || die "BENCH_SNAPSHOT_THREADS: '$t' is not a positive integer"; done
for c in "${CONVERTERS[@]}"; do case "$c" in json|avro) ;; *) die "BENCH_SNAPSHOT_CONVERTERS: '$c' (json, avro)" ;; esac; done
{ is_uint "$UPDATES_PER_S"; } || die "BENCH_SNAPSHOT_UPDATES_PER_S=$UPDATES_PER_S: expected an integer"
for s in "${SYSTEMS[@]}"; do case "$s" in pgcdc|pgcdc-initial|debezium) ;; *) die "BENCH_SNAPSHOT_SYSTEMS: '$s' (pgcdc, pgcdc-initial, debezium)" ;; esac; done

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$ROOT/target/bench"
RUN="$OUT/snapshot-$STAMP"
JSON="$OUT/snapshot-$STAMP.json"
DB=pgcdc_snapbench
PUB=snap_pub
BENCH_APP=pgcdc_snapbench
CLASSES="$OUT/classes"
DBZ_REST_PORT=58184
CONNECT_RUN="$OUT/snapshot-connect"
DBZ_OFFSET_FLUSH_MS=60000
TOPIC_REGEX_RUN="snap${STAMP}[a-z0-9]+\\..*"
SLOTS=()
for c in "${CONVERTERS[@]}"; do for t in "${THREADS[@]}"; do SLOTS+=("snap_p_${c}_$t" "snap_i_${c}_$t" "snap_d_${c}_$t"); done; done
mkdir -p "$RUN"
log "run directory: $RUN"
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
bench_services "$SERVICES"
[ "$SERVICES" != start ] || "$ROOT/scripts/services.sh" start registry
CONNECT_BOOTSTRAP=$KAFKA
REGISTRY_V2=${REGISTRY%/apis/ccompat/v7}/apis/registry/v2

debezium_bench_setup
CONN_BASE="host=$PG_HOST port=$PG_PORT user=$PG_USER sslmode=disable"

PGCDC_PID="" TIME_PID="" WR_PID="" WATCHDOG_PID="" CONNECT_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_bg "$WATCHDOG_PID" 5 watchdog
  stop_bg "$WR_PID" 5 WaitRecords
  stop_bg "$PGCDC_PID" 40 pgcdc
  stop_bg "$TIME_PID" 5 time
  if [ -n "$CONNECT_PID" ]; then log "stopping the Connect worker (pid $CONNECT_PID)"; connect_stop; fi
  drop_bench_objects "$DB" "$PUB" "${SLOTS[@]}"
  delete_topics "$TOPIC_REGEX_RUN"
  [ "$rc" = 0 ] || log "FAILED (exit $rc); logs in $RUN"
  exit "$rc"
}
trap cleanup EXIT
set -E
trap 'log "ERROR: command failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

us_per_row() { awk -v c="$1" -v n="$ROWS" 'BEGIN { if (c != "null" && c != "" && n > 0) printf "%.2f", c / n * 1000000; else printf "null" }'; }
# The broker writes GBs per run (2,000,000 JSON records are 6.8 GB): each run starts once the
# page cache has written the previous runs' data, or the runs after a big one are slower.
settle() { local t0; t0=$(now); sync; log "sync took $(fsub "$(now)" "$t0")s (not timed)"; }
drop_slot() { q postgres -c "SELECT pg_drop_replication_slot('$1') FROM pg_replication_slots WHERE slot_name = '$1' AND NOT active" >/dev/null; }

# Converter settings, as JSON, for CONVERTER: the same keys on both sides.
converter_json() {
  case "$1" in
    json) echo '{"key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "true",
                 "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true"}' ;;
    avro) jq -n --arg url "$REGISTRY_V2" '[("key", "value") as $p | {
            ($p + ".converter"): "io.apicurio.registry.utils.converter.AvroConverter",
            ($p + ".converter.apicurio.registry.url"): $url,
            ($p + ".converter.apicurio.registry.auto-register"): "true",
            ($p + ".converter.apicurio.registry.find-latest"): "true",
            ($p + ".converter.apicurio.registry.as-confluent"): "true",
            ($p + ".converter.apicurio.registry.use-id"): "contentId",
            ($p + ".converter.apicurio.registry.headers.enabled"): "false"}] | add' ;;
  esac
}

# connector_json NAME SLOT PREFIX THREADS CONVERTER: the connector config both systems get.
connector_json() {
  jq -n --arg name "$1" --arg slot "$2" --arg prefix "$3" --arg threads "$4" \
    --arg host "$PG_HOST" --arg port "$PG_PORT" --arg user "$PG_USER" --arg pw "$PGPASSWORD" \
    --arg db "$DB" --arg pub "$PUB" --argjson conv "$(converter_json "$5")" '
    {name: $name, config: ({
      "connector.class": "io.debezium.connector.postgresql.PostgresConnector", "tasks.max": "1",
      "database.hostname": $host, "database.port": $port, "database.user": $user,
      "database.password": $pw, "database.dbname": $db, "plugin.name": "pgoutput",
      "slot.name": $slot, "publication.name": $pub, "publication.autocreate.mode": "disabled",
      "table.include.list": "public.t", "topic.prefix": $prefix,
      "snapshot.mode": "initial_only", "snapshot.max.threads": $threads} + $conv)}'
}

# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

load_table() {
  local t0 first last step=500000
  drop_bench_objects "$DB" "$PUB" "${SLOTS[@]}"
  q postgres -c "CREATE DATABASE $DB"
  q "$DB" -c "CREATE TABLE public.t (id bigint PRIMARY KEY, n integer NOT NULL, amount numeric(12,2) NOT NULL,
                label text NOT NULL, created_at timestamptz NOT NULL) WITH (autovacuum_enabled = false)"
  log "loading $ROWS rows"
  t0=$(now)
  for (( first = 1; first <= ROWS; first += step )); do
    last=$(( first + step - 1 )); [ "$last" -le "$ROWS" ] || last=$ROWS
    q "$DB" -c "INSERT INTO public.t SELECT g, g % 1000, (g % 100000) / 100.0, md5(g::text), now() FROM generate_series($first, $last) g"
  done
  q "$DB" -c "VACUUM (ANALYZE, FREEZE) public.t"
  q "$DB" -c "CREATE PUBLICATION $PUB FOR TABLE public.t"
  q "$DB" -c "CHECKPOINT"
  PAGES=$(q "$DB" -c "SELECT pg_relation_size('public.t') / current_setting('block_size')::int8")
  TABLE_MIB=$(q "$DB" -c "SELECT round(pg_relation_size('public.t') / 1048576.0, 1)")
  log "loaded in $(fsub "$(now)" "$t0")s: $PAGES pages, $TABLE_MIB MiB"
}

# ---------------------------------------------------------------------------------------------
# The floors: COPY
# ---------------------------------------------------------------------------------------------

# run_copy N: N psql COPYs at once over N page ranges; DIR/copy-N.json.
run_copy() {
  local n=$1 i from to cond pids=() h0 i0 h1 i1 t0 secs cpu=0 k0 broker_s
  read -r h0 i0 < <(host_cpu); k0=$(broker_ticks)
  t0=$(now)
  for (( i = 0; i < n; i++ )); do
    from=$(( PAGES * i / n )); to=$(( PAGES * (i + 1) / n ))
    cond="ctid >= '($from,0)'::tid"; [ $(( i + 1 )) -eq "$n" ] || cond="$cond AND ctid < '($to,0)'::tid"
    [ "$n" -gt 1 ] || cond=true
    /usr/bin/time -v -o "$RUN/copy-$n-$i.time" \
      psql -X -q -v ON_ERROR_STOP=1 "$CONN_BASE dbname=$DB application_name=$BENCH_APP" \
        -c "COPY (SELECT * FROM public.t WHERE $cond) TO STDOUT" >"$RUN/copy-$n-$i.out" 2>"$RUN/copy-$n-$i.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "COPY failed: $(cat "$RUN"/copy-"$n"-*.err)"; done
  secs=$(fsub "$(now)" "$t0")
  read -r h1 i1 < <(host_cpu); broker_s=$(broker_cpu_s "$k0")
  local lines; lines=$(cat "$RUN"/copy-"$n"-*.out | wc -l)
  [ "$lines" = "$ROWS" ] || die "COPY x$n returned $lines rows, expected $ROWS"
  rm -f "$RUN"/copy-"$n"-*.out
  for (( i = 0; i < n; i++ )); do
    cpu=$(awk -v a="$cpu" -v u="$(time_field "$RUN/copy-$n-$i.time" "User time (seconds)")" \
              -v s="$(time_field "$RUN/copy-$n-$i.time" "System time (seconds)")" 'BEGIN { printf "%.2f", a + u + s }')
  done
  log "COPY x$n: ${secs}s, $(fdiv "$ROWS" "$secs") rows/s"
  mkjson system copy threads "$n" converter text seconds "$secs" rows_per_s "$(fdiv "$ROWS" "$secs")" \
    cpu_s "$cpu" cpu_us_per_row "$(us_per_row "$cpu")" host_busy_cpu_s "$(host_busy_s "$h0" "$i0" "$h1" "$i1")" \
    broker_cpu_s "$broker_s" note "psql clients' cpu; the backends are in host_busy_cpu_s" >"$RUN/copy-$n.json"
}

# ---------------------------------------------------------------------------------------------
# pgcdc and Debezium
# ---------------------------------------------------------------------------------------------

# run_pgcdc CONVERTER THREADS: snapshot.mode=initial_only.
run_pgcdc() { run_pgcdc_mode initial_only "$@"; }

# run_pgcdc-initial CONVERTER THREADS: snapshot.mode=initial, stopped once the topic is full.
run_pgcdc-initial() { run_pgcdc_mode initial "$@"; }

# run_pgcdc_mode SNAPSHOT_MODE CONVERTER THREADS
run_pgcdc_mode() {
  local mode=$1 conv=$2 th=$3 sys=pgcdc tag=p
  [ "$mode" = initial_only ] || { sys=pgcdc-initial; tag=i; }
  local d="$RUN/$sys-$conv-$th" slot="snap_${tag}_${conv}_$th" prefix="snap${STAMP}$tag$conv$th" topic h0 i0 h1 i1 k0 t0 t_done secs cpu rss broker_s rc
  mkdir -p "$d"
  topic="$prefix.public.t"
  connector_json "snap-pgcdc" "$slot" "$prefix" "$th" "$conv" \
    | jq --arg f "$d/offsets.json" --arg k "$KAFKA" --arg mode "$mode" \
      '.config += {"offset.storage.file.filename": $f, "bootstrap.servers": $k, "snapshot.mode": $mode}' >"$d/connector.json"
  chmod 600 "$d/connector.json"
  settle
  start_record_waiter "$topic" "$d/records"
  read -r h0 i0 < <(host_cpu); k0=$(broker_ticks)
  log "$sys $conv threads=$th: starting (log: $d/pgcdc.log)"
  t0=$(now)
  start_pgcdc "$d" "$d/connector.json"
  rc=0; wait "$WR_PID" || rc=$?
  WR_PID=""
  [ "$rc" = 0 ] || { tail -n 30 "$d/pgcdc.log" >&2; die "$sys $conv threads=$th: the topic did not reach $ROWS records (WaitRecords exit $rc)"; }
  t_done=$(wr_time "$d/records" done)
  read -r h1 i1 < <(host_cpu); broker_s=$(broker_cpu_s "$k0")
  if [ "$mode" = initial_only ]; then
    # initial_only: pgcdc exits once Kafka has acknowledged the snapshot.
    rc=0; wait "$TIME_PID" || rc=$?
    TIME_PID=""; PGCDC_PID=""
  else
    # initial: pgcdc streams on after the snapshot.
    stop_pgcdc; rc=$PGCDC_RC
  fi
  [ "$rc" = 0 ] || { tail -n 30 "$d/pgcdc.log" >&2; die "$sys $conv threads=$th exited with $rc"; }
  secs=$(fsub "$t_done" "$t0")
  cpu=$(awk -v u="$(time_field "$d/pgcdc.time" "User time (seconds)")" -v s="$(time_field "$d/pgcdc.time" "System time (seconds)")" 'BEGIN { printf "%.2f", u + s }')
  rss=$(kib_to_mib "$(time_field "$d/pgcdc.time" "Maximum resident set size (kbytes)")")
  log "$sys $conv threads=$th: ${secs}s, $(fdiv "$ROWS" "$secs") rows/s, cpu ${cpu}s, peak RSS ${rss} MiB, $(strip_ansi "$d/pgcdc.log" | grep -c 'snapshot checkpoint' || true) checkpoints"
  drop_slot "$slot"
  delete_topics "$prefix\\..*"
  mkjson system "$sys" threads "$th" converter "$conv" seconds "$secs" rows_per_s "$(fdiv "$ROWS" "$secs")" \
    cpu_s "$cpu" cpu_us_per_row "$(us_per_row "$cpu")" peak_rss_mib "$rss" broker_cpu_s "$broker_s" \
    host_busy_cpu_s "$(host_busy_s "$h0" "$i0" "$h1" "$i1")" \
    log_warnings "$(strip_ansi "$d/pgcdc.log" | grep -c ' WARN ' || true)" \
    note "timed from process start until the topic held every row; cpu and RSS of the whole process" >"$d.json"
}

# run_debezium CONVERTER THREADS
run_debezium() {
  local conv=$1 th=$2 d="$RUN/debezium-$1-$2" slot="snap_d_$1_$2" prefix="snap${STAMP}d$1$2" name topic h0 i0 h1 i1 k0 c0 c1 t0 t_done secs cpu hwm broker_s rc
  name="snap-dbz-$conv-$th"
  mkdir -p "$d"
  topic="$prefix.public.t"
  connector_json "$name" "$slot" "$prefix" "$th" "$conv" >"$d/connector.json"
  chmod 600 "$d/connector.json"
  kill -0 "$CONNECT_PID" 2>/dev/null || die "the Connect worker (pid $CONNECT_PID) is gone"
  settle
  start_record_waiter "$topic" "$d/records"
  echo 5 2>/dev/null >"/proc/$CONNECT_PID/clear_refs" || true
  read -r h0 i0 < <(host_cpu); k0=$(broker_ticks); c0=$(cpu_ticks "$CONNECT_PID")
  log "debezium $conv threads=$th: POST /connectors $name"
  t0=$(now)
  connect_create "$d/connector.json"
  dbz_watchdog "$name" >"$d/watchdog.out" 2>&1 &
  WATCHDOG_PID=$!
  rc=0; wait -n -p FIRST "$WR_PID" "$WATCHDOG_PID" || rc=$?
  [ "${FIRST:-}" = "$WR_PID" ] || { cat "$d/watchdog.out" >&2; die "debezium $conv threads=$th failed (log: $CONNECT_RUN/logs/connect.log)"; }
  WR_PID=""
  [ "$rc" = 0 ] || die "debezium $conv threads=$th: the topic did not reach $ROWS records (WaitRecords exit $rc)"
  c1=$(cpu_ticks "$CONNECT_PID"); hwm=$(vm_field "$CONNECT_PID" VmHWM)
  read -r h1 i1 < <(host_cpu); broker_s=$(broker_cpu_s "$k0")
  stop_bg "$WATCHDOG_PID" 5 watchdog; WATCHDOG_PID=""
  t_done=$(wr_time "$d/records" done)
  secs=$(fsub "$t_done" "$t0")
  cpu=$(ticks_to_s $(( c1 - c0 )))
  log "debezium $conv threads=$th: ${secs}s, $(fdiv "$ROWS" "$secs") rows/s, cpu ${cpu}s, VmHWM ${hwm} MiB"
  curl -sS --max-time 60 -o /dev/null -X DELETE "http://127.0.0.1:$DBZ_REST_PORT/connectors/$name" || die "DELETE /connectors/$name failed"
  local deadline=$(( $(date +%s) + 60 ))
  until [ -z "$(q postgres -c "SELECT 1 FROM pg_replication_slots WHERE slot_name = '$slot' AND active")" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "slot $slot still active 60s after the connector was deleted"
    sleep 0.1
  done
  drop_slot "$slot"
  delete_topics "$prefix\\..*"
  mkjson system debezium threads "$th" converter "$conv" seconds "$secs" rows_per_s "$(fdiv "$ROWS" "$secs")" \
    cpu_s "$cpu" cpu_us_per_row "$(us_per_row "$cpu")" peak_rss_mib "$hwm" broker_cpu_s "$broker_s" \
    host_busy_cpu_s "$(host_busy_s "$h0" "$i0" "$h1" "$i1")" \
    note "timed from POST /connectors until the topic held every row; cpu = the Connect JVM's growth; RSS = its VmHWM" >"$d.json"
}

# ---------------------------------------------------------------------------------------------
# An incremental snapshot while the stream runs
# ---------------------------------------------------------------------------------------------

# run_incremental: pgcdc streams UPDATES_PER_S single-row updates of random rows of t (one
# transaction each, paced by the server, synchronous_commit on so that each commit reaches the
# walsender at once) while an incremental snapshot of t, started by an
# execute-snapshot signal in the signal table, reads it in chunks; DIR/incremental.json with the
# snapshot's rows/s and the stream's commit -> broker latency (the topic's LogAppendTime minus
# source.ts_ms) in the 5 s before the signal and while the snapshot ran.
run_incremental() {
  local d="$RUN/incremental" slot=snap_incr prefix="snap${STAMP}incr" topic writer_pid t_signal t_done secs
  local deadline rows_read lsn cpu rss broker_s k0
  mkdir -p "$d"
  topic="$prefix.public.t"
  q "$DB" -c "CREATE TABLE public.dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048) NULL)"
  q "$DB" -c "ALTER PUBLICATION $PUB ADD TABLE public.dbz_signal"
  q "$DB" -c "CREATE TABLE public.snap_progress (updates bigint NOT NULL); INSERT INTO public.snap_progress VALUES (0);
              CREATE TABLE public.snap_stop (stop boolean)"
  q "$DB" -c "CREATE PROCEDURE public.snap_updates(rate int) LANGUAGE plpgsql AS \$\$
    DECLARE i bigint := 0; t0 timestamptz := clock_timestamp(); maxid bigint := (SELECT max(id) FROM public.t); r bigint;
    BEGIN
      LOOP
        -- (random() in the WHERE clause would be evaluated per row: a full scan per update)
        r := 1 + floor(random() * maxid)::bigint;
        UPDATE public.t SET n = n + 1 WHERE id = r;
        COMMIT;
        i := i + 1;
        IF i % 50 = 0 THEN
          UPDATE public.snap_progress SET updates = i;
          COMMIT;
          EXIT WHEN EXISTS (SELECT FROM public.snap_stop);
          PERFORM pg_sleep(greatest(0, extract(epoch FROM t0 + (i::float8 / rate) * interval '1 second' - clock_timestamp())));
        END IF;
      END LOOP;
    END \$\$"
  java -cp "$KAFKA_LIB/*" "$ROOT/bench/CreateTopic.java" "$KAFKA" "$topic" 1 1 message.timestamp.type=LogAppendTime \
    >"$d/create-topic.log" 2>&1 || { cat "$d/create-topic.log" >&2; die "could not create $topic"; }
  connector_json "snap-incr" "$slot" "$prefix" 1 json \
    | jq --arg f "$d/offsets.json" --arg k "$KAFKA" '.config += {"offset.storage.file.filename": $f, "bootstrap.servers": $k,
        "snapshot.mode": "no_data", "signal.data.collection": "public.dbz_signal"}' >"$d/connector.json"
  chmod 600 "$d/connector.json"
  k0=$(broker_ticks)
  start_pgcdc "$d" "$d/connector.json"
  deadline=$(( $(date +%s) + 60 ))
  until strip_ansi "$d/pgcdc.log" | grep -q 'streaming started'; do
    kill -0 "$TIME_PID" 2>/dev/null || { tail -n 30 "$d/pgcdc.log" >&2; die "pgcdc (incremental) exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "pgcdc (incremental) not streaming within 60s"
    sleep 0.05
  done
  psql -X -q -v ON_ERROR_STOP=1 "$CONN_BASE dbname=$DB application_name=snap_writer" \
    -c "SET synchronous_commit = on" -c "CALL public.snap_updates($UPDATES_PER_S)" >"$d/writer.out" 2>&1 &
  writer_pid=$!
  # Five seconds of updates before the signal: the stream's latency without a snapshot.
  deadline=$(( $(date +%s) + 60 ))
  until [ "$(q "$DB" -c "SELECT updates FROM public.snap_progress")" -ge $(( UPDATES_PER_S * 5 )) ]; do
    kill -0 "$writer_pid" 2>/dev/null || { cat "$d/writer.out" >&2; die "the update writer exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "the update writer is slower than $UPDATES_PER_S/s"
    sleep 0.1
  done
  t_signal=$(now)
  q "$DB" -c "INSERT INTO public.dbz_signal VALUES ('bench-1', 'execute-snapshot', '{\"data-collections\": [\"public.t\"], \"type\": \"incremental\"}')"
  log "incremental: signal sent at ${UPDATES_PER_S} updates/s"
  deadline=$(( $(date +%s) + RUN_TIMEOUT ))
  until strip_ansi "$d/pgcdc.log" | grep -q 'incremental snapshot completed'; do
    kill -0 "$TIME_PID" 2>/dev/null || { tail -n 30 "$d/pgcdc.log" >&2; die "pgcdc (incremental) exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "the incremental snapshot did not complete within ${RUN_TIMEOUT}s"
    sleep 0.05
  done
  t_done=$(now)
  secs=$(fsub "$t_done" "$t_signal")
  q "$DB" -c "INSERT INTO public.snap_stop VALUES (true)"
  wait "$writer_pid" || die "the update writer failed: $(cat "$d/writer.out")"
  lsn=$(q "$DB" -c "SELECT pg_current_wal_lsn()")
  deadline=$(( $(date +%s) + 120 ))
  until [ "$(q postgres -c "SELECT confirmed_flush_lsn >= '$lsn' FROM pg_replication_slots WHERE slot_name = '$slot'")" = t ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "pgcdc (incremental) did not confirm $lsn within 120s"
    sleep 0.1
  done
  broker_s=$(broker_cpu_s "$k0")
  stop_pgcdc
  [ "$PGCDC_RC" = 0 ] || die "pgcdc (incremental) exited with $PGCDC_RC after SIGTERM"
  cpu=$(awk -v u="$(time_field "$d/pgcdc.time" "User time (seconds)")" -v s="$(time_field "$d/pgcdc.time" "System time (seconds)")" 'BEGIN { printf "%.2f", u + s }')
  rss=$(kib_to_mib "$(time_field "$d/pgcdc.time" "Maximum resident set size (kbytes)")")
  # Every record: its LogAppendTime (ms) and value; snapshot reads counted, updates' latency.
  kcat -C -b "$KAFKA" -t "$topic" -o beginning -e -q -f '%T %s\n' >"$d/records.txt"
  rows_read=$(grep -c -F '"op":"r"' "$d/records.txt" || true)
  # Every row arrived: from the snapshot, or (a row the stream changed while its chunk was
  # open, which the snapshot then leaves out) from an update committed after the signal.
  local covered
  covered=$(awk -v s="$t_signal" '
    match($0, /"after":\{"id":[0-9]+/) {
      id = substr($0, RSTART + 14, RLENGTH - 14)
      if (index($0, "\"op\":\"r\"")) seen[id] = 1
      else if (index($0, "\"op\":\"u\"") && match($0, /"source":\{[^}]*"ts_ms":[0-9]+/)) {
        src = substr($0, RSTART, RLENGTH); sub(/.*"ts_ms":/, "", src)
        if (src / 1000 >= s) seen[id] = 1
      }
    }
    END { n = 0; for (k in seen) n++; print n }' "$d/records.txt")
  [ "$covered" -ge "$ROWS" ] || die "incremental: $covered rows arrived (snapshot or later update), expected $ROWS"
  awk -v s="$t_signal" -v e="$t_done" '
    index($0, "\"op\":\"u\"") && match($0, /"source":\{[^}]*"ts_ms":[0-9]+/) {
      src = substr($0, RSTART, RLENGTH); sub(/.*"ts_ms":/, "", src)
      lat = $1 - src; t = src / 1000
      if (t >= s - 5 && t < s) print "before", lat; else if (t >= s && t < e) print "during", lat
    }' "$d/records.txt" >"$d/latency.txt"
  rm -f "$d/records.txt"
  pct() { awk -v w="$1" '$1 == w { print $2 }' "$d/latency.txt" | sort -n | awk -v p="$2" '{ v[NR] = $1 } END { if (NR) print v[int((NR - 1) * p) + 1]; else print "null" }'; }
  count() { awk -v w="$1" '$1 == w' "$d/latency.txt" | wc -l; }
  log "incremental: $ROWS rows in ${secs}s ($(fdiv "$ROWS" "$secs") rows/s); stream p99 $(pct before 0.99) ms before, $(pct during 0.99) ms during"
  delete_topics "$prefix\\..*"
  drop_slot "$slot"
  mkjson system pgcdc-incremental threads 1 converter json seconds "$secs" rows_per_s "$(fdiv "$ROWS" "$secs")" \
    snapshot_records "$rows_read" updates_per_s "$UPDATES_PER_S" \
    stream_updates_before "$(count before)" stream_p50_ms_before "$(pct before 0.5)" stream_p99_ms_before "$(pct before 0.99)" \
    stream_updates_during "$(count during)" stream_p50_ms_during "$(pct during 0.5)" stream_p99_ms_during "$(pct during 0.99)" \
    stream_max_ms_during "$(pct during 1)" cpu_s "$cpu" peak_rss_mib "$rss" broker_cpu_s "$broker_s" \
    note "timed from the signal's INSERT until pgcdc logged the snapshot complete; latency = LogAppendTime - source.ts_ms of the updates committed in the 5 s before the signal and during the snapshot; cpu/RSS over the whole run" >"$RUN/incremental.json"
}

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

T_START=$(now)
if host_was_busy "$LOADAVG_START"; then
  log "WARNING: load average was $LOADAVG_START at start on $(nproc) cpus: figures are pessimistic"
fi
load_table
run_copy 1
run_copy 4
if [[ " ${SYSTEMS[*]} " == *" debezium "* ]]; then
  connect_common_config
  cat >>"$CONNECT_RUN/worker.properties" <<EOF
offset.storage.file.filename=$CONNECT_RUN/connect.offsets
EOF
  CONNECT_PID=$(connect_launch org.apache.kafka.connect.cli.ConnectStandalone "$CONNECT_RUN/worker.properties")
  log "connect: Kafka Connect standalone (pid $CONNECT_PID), REST 127.0.0.1:$DBZ_REST_PORT"
  connect_wait_rest "$CONNECT_PID"
fi
for conv in "${CONVERTERS[@]}"; do
  for th in "${THREADS[@]}"; do
    for sys in "${SYSTEMS[@]}"; do "run_$sys" "$conv" "$th"; done
  done
done
if [ -n "$CONNECT_PID" ]; then connect_stop; CONNECT_PID=""; fi
if [[ " ${SYSTEMS[*]} " == *" pgcdc "* ]] && [ "$UPDATES_PER_S" -gt 0 ]; then
  SLOTS+=(snap_incr)
  run_incremental
fi
TOTAL_S=$(fsub "$(now)" "$T_START")

GIT_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
jq -n --arg date "$STAMP" --arg mode "$MODE" --argjson rows "$ROWS" --argjson pages "$PAGES" \
  --argjson mib "$TABLE_MIB" --arg commit "$GIT_COMMIT" --argjson cpus "$(nproc)" \
  --arg load0 "$LOADAVG_START" --arg load1 "$(cut -d' ' -f1-3 /proc/loadavg)" --argjson total "$TOTAL_S" \
  --arg dbz "$DBZ_VERSION" --arg heap "${CONNECT_HEAP[*]}" \
  --slurpfile runs <(cat "$RUN"/copy-*.json "$RUN"/pgcdc-*.json "$RUN"/debezium-*.json 2>/dev/null || true) \
  --slurpfile incr <(cat "$RUN/incremental.json" 2>/dev/null || echo null) '
  def ratio($a; $b): if ($a != null and $b != null and $b > 0) then ($a / $b * 1000 | round / 1000) else null end;
  def find($s; $c; $t): [$runs[] | select(.system == $s and .converter == $c and .threads == $t)][0];
  ($runs | map(select(.system == "copy" and .threads == 1))[0]) as $copy1 |
  {bench: "snapshot", date: $date, mode: $mode, rows: $rows, table_pages: $pages, table_mib: $mib,
   pgcdc_commit: $commit, debezium: ("debezium-connector-postgres " + $dbz), connect_heap: $heap,
   host: {cpus: $cpus, loadavg_at_start: $load0, loadavg_at_end: $load1}, total_seconds: $total,
   runs: $runs, incremental: $incr[0],
   ratios: [$runs[] | select(.system == "pgcdc") | . as $p | find("debezium"; $p.converter; $p.threads) as $d |
     {converter: $p.converter, threads: $p.threads,
      pgcdc_to_debezium_rows_per_s: ratio($p.rows_per_s; $d.rows_per_s),
      pgcdc_to_debezium_cpu_per_row: ratio($p.cpu_s; $d.cpu_s),
      pgcdc_to_one_copy_rows_per_s: ratio($p.rows_per_s; $copy1.rows_per_s)}],
   resumable_ratios: [$runs[] | select(.system == "pgcdc-initial") | . as $i | find("pgcdc"; $i.converter; $i.threads) as $p |
     {converter: $i.converter, threads: $i.threads,
      initial_to_initial_only_rows_per_s: ratio($i.rows_per_s; $p.rows_per_s),
      initial_to_initial_only_cpu: ratio($i.cpu_s; $p.cpu_s)}]}' >"$JSON"

{
  echo
  echo "=== initial snapshot: $ROWS rows ($TABLE_MIB MiB, $PAGES pages), $STAMP, $MODE size ==="
  echo "pgcdc $GIT_COMMIT; debezium-connector-postgres $DBZ_VERSION on Kafka Connect standalone, JVM ${CONNECT_HEAP[*]}"
  echo "host $(nproc) cpus, load average $LOADAVG_START at start; one partition per topic; PostgreSQL, Kafka and the registry on this host"
  printf '  %-13s %-5s %7s %8s %10s %7s %9s %9s %9s %9s\n' system conv threads seconds rows/s cpu-s "µs/row" "RSS MiB" "broker s" "host s"
  jq -r '.runs[] | [.system, .converter, .threads, .seconds, .rows_per_s, .cpu_s, .cpu_us_per_row, (.peak_rss_mib // "-"), .broker_cpu_s, .host_busy_cpu_s] | map(tostring) | @tsv' "$JSON" \
    | awk -F'\t' '{ printf "  %-13s %-5s %7s %8s %10s %7s %9s %9s %9s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
  echo "ratios (pgcdc / debezium at equal converter and threads; pgcdc / one COPY)"
  jq -r '.ratios[] | "  \(.converter) threads=\(.threads): rows/s \(.pgcdc_to_debezium_rows_per_s), cpu per row \(.pgcdc_to_debezium_cpu_per_row), rows/s vs one COPY \(.pgcdc_to_one_copy_rows_per_s)"' "$JSON"
  jq -r '.resumable_ratios[] | "  resumable (snapshot.mode=initial) / initial_only, \(.converter) threads=\(.threads): rows/s \(.initial_to_initial_only_rows_per_s), cpu \(.initial_to_initial_only_cpu)"' "$JSON"
  jq -r '.incremental | select(. != null) | "incremental snapshot (pgcdc, JSON, chunks of 1024) while \(.updates_per_s) updates/s stream: \(.rows_per_s) rows/s (\(.seconds) s);",
    "  stream commit -> broker latency: p50 \(.stream_p50_ms_before) ms, p99 \(.stream_p99_ms_before) ms in the 5 s before (\(.stream_updates_before) updates); p50 \(.stream_p50_ms_during) ms, p99 \(.stream_p99_ms_during) ms, max \(.stream_max_ms_during) ms during (\(.stream_updates_during) updates)"' "$JSON"
  echo "report: $JSON ($TOTAL_S s in all)"
} 
