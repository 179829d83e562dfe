#!/usr/bin/env bash
# One huge transaction, with and without pgcdc.pgoutput.streaming, measured in one script.
#
# Usage: scripts/bench-large-tx.sh [--help]
#
# For each mode (BENCH_LTX_MODES, default "off on", alternated BENCH_RUNS times [1]): a fresh
# database with t(id bigint primary key, payload text) and a publication; pgcdc run streaming
# only (snapshot.mode=no_data) on a new slot and topic prefix; the slot's statistics reset;
# then ONE transaction inserting BENCH_ROWS rows [5,000,000] of about 100 bytes
# (id, three md5 hashes), committed while pgcdc streams. Reported per run:
#   - pg_stat_replication_slots of pgcdc's slot: spill_txns/spill_count/spill_bytes (the
#     server's own spill under pg_replslot), stream_txns/stream_count/stream_bytes;
#   - pgcdc's peak RSS (VmHWM) and its local spill bytes (its log);
#   - the time from the commit (the load's psql returning) to the slot's confirmed_flush_lsn
#     reaching the transaction's commit end LSN, which pgcdc confirms only once Kafka
#     acknowledged every record (polled server-side every 20 ms);
#   - CPU seconds of the walsender and of pgcdc from the start of the load to the last ack;
#   - records in the topic (must equal BENCH_ROWS).
# The server runs with its defaults for logical_decoding_work_mem (64 MB). The report goes to
# target/bench/large-tx-<UTC stamp>.json; the topics, slots and database are removed after each
# run. Needs the local services (scripts/services.sh start pg and start kafka, done here).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
case "${1:-}" in
  -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "bench-large-tx: unknown argument: $1" >&2; exit 2 ;;
esac

log() { printf '[bench-large-tx %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
need_pkg() { command -v "$1" >/dev/null 2>&1 || die "missing $1 (apt-get install $2)"; }

# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"

ROWS=${BENCH_ROWS:-5000000}
RUNS=${BENCH_RUNS:-1}
MODES=${BENCH_LTX_MODES:-off on}
NO_BUILD=${BENCH_NO_BUILD:-0}
RUN_TIMEOUT=${BENCH_TIMEOUT_S:-1800}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$ROOT/target/bench
RUN=$OUT/large-tx-$STAMP
PGCDC=$ROOT/target/release/pgcdc
KAFKA_LIB=$ROOT/target/services/kafka/lib
BENCH_APP=pgcdc_bench_ltx
DB=pgcdc_bench_ltx
PUB=ltx_pub
mkdir -p "$RUN"

bench_tools
bench_services start
CONN_BASE="host=$PG_HOST port=$PG_PORT user=$PG_USER sslmode=disable"
bench_build

TIME_PID=""; PGCDC_PID=""; SLOT=""; PREFIX=""
cleanup() {
  [ -z "$PGCDC_PID" ] || stop_pgcdc || true
  [ -z "$SLOT" ] || drop_bench_objects "$DB" "$PUB" "$SLOT"
  [ -z "$PREFIX" ] || delete_topics "$PREFIX\\..*"
}
trap cleanup EXIT

# slot_stats SLOT -> "spill_txns spill_count spill_bytes stream_txns stream_count stream_bytes total_txns"
slot_stats() {
  q postgres -F ' ' -c "SELECT spill_txns, spill_count, spill_bytes, stream_txns, stream_count, stream_bytes, total_txns
                        FROM pg_stat_replication_slots WHERE slot_name = '$1'"
}

# one_run MODE N -> prints the run's JSON object (called in this shell: cleanup sees its state)
one_run() {
  local mode=$1 n=$2 dir config ws_pid ws0 ws1 pg0 pg1 t_load t_commit t_done stats deadline
  local streaming=false records spill_local hwm
  [ "$mode" = on ] && streaming=true
  dir=$RUN/$mode-$n; mkdir -p "$dir/spill" "$dir/offsets"
  PREFIX=ltx${mode}${n}${STAMP,,}; PREFIX=${PREFIX//[^a-z0-9]/}; SLOT=$PREFIX
  drop_bench_objects "$DB" "$PUB" "$SLOT"
  q postgres -c "CREATE DATABASE $DB" >/dev/null
  q "$DB" -c "CREATE EXTENSION IF NOT EXISTS pg_walinspect; CREATE TABLE t (id bigint PRIMARY KEY, payload text); CREATE PUBLICATION $PUB FOR TABLE t" >/dev/null
  config=$dir/connector.properties
  cat >"$config" <<EOF
name=$PREFIX
connector.class=io.debezium.connector.postgresql.PostgresConnector
plugin.name=pgoutput
database.hostname=$PG_HOST
database.port=$PG_PORT
database.user=$PG_USER
database.password=$PGPASSWORD
database.dbname=$DB
database.sslmode=disable
slot.name=$SLOT
publication.name=$PUB
publication.autocreate.mode=disabled
snapshot.mode=no_data
topic.prefix=$PREFIX
bootstrap.servers=$KAFKA
offset.storage.file.filename=$dir/offsets/offsets.json
status.update.interval.ms=100
pgcdc.pgoutput.streaming=$streaming
pgcdc.pgoutput.streaming.spill.dir=$dir/spill
EOF
  start_pgcdc "$dir" "$config" --listeners http://127.0.0.1:0
  deadline=$(( $(date +%s) + 60 ))
  until [ -n "$(q postgres -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$SLOT' AND active")" ]; do
    kill -0 "$TIME_PID" 2>/dev/null || { tail -n 20 "$dir/pgcdc.log" >&2; die "pgcdc exited (log: $dir/pgcdc.log)"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "pgcdc did not start streaming within 60 s"
    sleep 0.1
  done
  ws_pid=$(q postgres -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$SLOT'")
  q postgres -c "SELECT pg_stat_reset_replication_slot('$SLOT')" >/dev/null
  ws0=$(cpu_ticks "$ws_pid"); pg0=$(cpu_ticks "$PGCDC_PID")
  log "$mode run $n: one transaction of $ROWS rows (streaming=$streaming)"
  t_load=$(now)
  q "$DB" >"$dir/load.out" <<SQL
BEGIN;
INSERT INTO t SELECT g, md5(g::text) || md5((g + 1)::text) || md5((g + 2)::text) FROM generate_series(1, $ROWS) g;
$XID_MARKER_SQL
SET LOCAL synchronous_commit = on;
COMMIT;
$END_MARKER_SQL
SQL
  t_commit=$(now)
  load_end_lsn "$DB" "$dir/load.out"
  start_slot_waiter "$DB" "$SLOT" "$END_LSN" "$RUN_TIMEOUT" "${BENCH_APP}_w" "$dir/waiter"
  wait "$WAITER_PID" || { cat "$dir/waiter.err" >&2; tail -n 20 "$dir/pgcdc.log" >&2; die "the slot did not reach $END_LSN"; }
  t_done=$(cat "$dir/waiter.out")
  ws1=$(cpu_ticks "$ws_pid"); pg1=$(cpu_ticks "$PGCDC_PID")
  hwm=$(vm_field "$PGCDC_PID" VmHWM)
  # The walsender reports its slot statistics after the transaction; wait for them.
  deadline=$(( $(date +%s) + 30 ))
  stats=$(slot_stats "$SLOT")
  until [ "$(awk '{ print $7 }' <<<"$stats")" -ge 1 ] 2>/dev/null || [ "$(date +%s)" -ge "$deadline" ]; do
    sleep 0.2; stats=$(slot_stats "$SLOT")
  done
  records=$(watermark_records "$PREFIX.public.t")
  spill_local=$(strip_ansi "$dir/pgcdc.log" | grep -o 'spill_bytes=[0-9]*' | tail -n 1 | cut -d= -f2 || true)
  stop_pgcdc
  [ "$PGCDC_RC" = 0 ] || log "WARNING: pgcdc exited with $PGCDC_RC"
  read -r s_txns s_count s_bytes st_txns st_count st_bytes _ <<<"$stats"
  mkjson mode "$mode" run "$n" rows "$ROWS" records "$records" \
    load_s "$(fsub "$t_commit" "$t_load")" commit_to_last_ack_s "$(fsub "$t_done" "$t_commit")" \
    server_spill_txns "$s_txns" server_spill_count "$s_count" server_spill_bytes "$s_bytes" \
    server_stream_txns "$st_txns" server_stream_count "$st_count" server_stream_bytes "$st_bytes" \
    pgcdc_peak_rss_mib "$hwm" pgcdc_spill_bytes "${spill_local:-0}" \
    walsender_cpu_s "$(ticks_to_s $(( ws1 - ws0 )))" pgcdc_cpu_s "$(ticks_to_s $(( pg1 - pg0 )))"
  [ "$records" = "$ROWS" ] || log "WARNING: $records records in the topic, expected $ROWS"
  drop_bench_objects "$DB" "$PUB" "$SLOT"; SLOT=""
  delete_topics "$PREFIX\\..*"; PREFIX=""
}

for n in $(seq 1 "$RUNS"); do
  for mode in $MODES; do
    one_run "$mode" "$n" >"$RUN/result-$n-$mode.json"
  done
done
REPORT=$OUT/large-tx-$STAMP.json
cat "$RUN"/result-*.json | jq -s '{runs: .}' >"$REPORT"
jq -r '.runs[] | "\(.mode) run \(.run): \(.rows) rows, \(.records) records; commit→last ack \(.commit_to_last_ack_s) s (load \(.load_s) s); server spill \(.server_spill_bytes) B in \(.server_spill_count), streamed \(.server_stream_bytes) B in \(.server_stream_count); pgcdc peak RSS \(.pgcdc_peak_rss_mib) MiB, local spill \(.pgcdc_spill_bytes) B; cpu-s walsender \(.walsender_cpu_s), pgcdc \(.pgcdc_cpu_s)"' "$REPORT"
log "report: $REPORT"
