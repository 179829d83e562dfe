#!/usr/bin/env bash
# The switch run: Debezium 3.6.1 (Kafka Connect distributed, offsets in the connect-offsets
# topic) and pgcdc take turns on ONE slot, ONE publication, ONE broker and ONE offsets topic,
# while a writer commits transactions the whole time:
#   1. debezium        creates the slot, snapshots the table, streams; stopped gracefully
#                      (PUT /connectors/<name>/stop)
#   2. pgcdc           resumes from the offsets Debezium stored: no snapshot, nothing published
#                      again; stopped gracefully (SIGTERM)
#   3. debezium again  resumes from the offsets pgcdc stored (PUT /connectors/<name>/resume);
#                      at most the one transaction pgcdc had in flight is published again.
#                      It runs with lsn.flush.mode=manual, so the slot stays behind the stored
#                      offsets (the widest case of the lag Debezium's offset flush interval
#                      gives); the worker is killed (SIGKILL) after an offset flush
#   4. pgcdc again     resumes from the offsets Debezium flushed before the crash: the server
#                      sends every transaction since the slot's position again, pgcdc skips
#                      those the offsets cover, and what it publishes again lies after the
#                      stored position (at least once after a crash), never before it
# Then a final transaction, and `dbz-compare switch-check` reads the topic: every row and
# every counter update published, no snapshot after the first phase, order kept within each
# phase, and each phase's repeats within its rule. The offsets record Debezium wrote and the
# one pgcdc wrote are printed side by side: same key bytes, same partition. Then, on another
# table (sw_incr, 10,000 rows, chunks of 100 rows, read slowly through an
# additional-conditions filter that sleeps 1 ms per row):
#   5. pgcdc           reads an execute-snapshot signal (the signal table) and is stopped
#                      (SIGTERM) in the middle of the incremental snapshot, its progress (and
#                      the filter) in the offsets in Debezium's keys
#   6. debezium        (the worker started again) resumes the incremental snapshot from
#                      pgcdc's offsets: every row of sw_incr read once by one side or the
#                      other, Debezium re-reading at most the chunk pgcdc had in flight
#
# Usage: scripts/debezium/switch.sh
# Environment: DBZ_KEEP=1 keeps everything running; DBZ_TIMEOUT seconds per wait (180);
#   SWITCH_RECORDS records each phase publishes before the switch (default 2000).
# Output: the check's table on stdout and in target/debezium/switch/report.txt. Exit status:
# 0 = every check passed, 1 = a check failed, other = harness error.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

switch_names
TOPIC="$PREFIX.public.sw_rows"
OFFSET_KEY="[\"$NAME\",{\"server\":\"$PREFIX\"}]"
PER_PHASE=${SWITCH_RECORDS:-2000}
SNAPSHOT_ROWS=101
INCR_TOPIC="$PREFIX.public.sw_incr"
INCR_ROWS=10000
INCR_CHUNK=100

T0=$(now)
phase() { log "[$(elapsed "$T0")s] $*"; }

# ------------------------------------------------------------------------------ prerequisites
phase "prerequisites"
"$ROOT/scripts/debezium/setup.sh"
"$ROOT/scripts/services.sh" start pg
"$ROOT/scripts/services.sh" start kafka   # the broker jars; the run uses its own broker
if [ ! -x "$COMPARE" ] || [ -n "$(find "$ROOT/tools/dbz-compare/src" "$COMPARE_MANIFEST" -newer "$COMPARE" 2>/dev/null)" ]; then
  log "building tools/dbz-compare"
  CARGO_TARGET_DIR="$ROOT/target" cargo build --quiet --manifest-path "$COMPARE_MANIFEST"
fi
if [ ! -x "$PGCDC_BIN" ]; then
  log "building pgcdc (cargo build --bin pgcdc)"
  cargo build --quiet --bin pgcdc
fi

# ------------------------------------------------------------------------------ helpers
WRITER_PID=
writer_stop() {
  [ -n "$WRITER_PID" ] || return 0
  touch "$RUN/writer.stop"
  wait "$WRITER_PID" 2>/dev/null || true
  WRITER_PID=
}

cleanup() {
  local rc=$?
  writer_stop
  if [ "${DBZ_KEEP:-0}" = 1 ]; then
    log "DBZ_KEEP=1: leaving Connect, pgcdc, the broker $DBZ_KAFKA, slot $SLOT_DBZ and database $DB; scripts/debezium/stop.sh removes them"
    exit "$rc"
  fi
  phase "cleanup"
  stop_all || true
  drop_slots || true
  sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null || true
  phase "done (exit $rc)"
  exit "$rc"
}

# One writer transaction: three new rows and the counter (row 0) incremented, so every
# transaction has an insert per new row and an update of one hot key.
writer_start() {
  rm -f "$RUN/writer.stop"
  local stop="$RUN/writer.stop"
  (
    i=0
    while [ ! -e "$stop" ]; do
      i=$((i + 1)); base=$((SNAPSHOT_ROWS - 1 + (i - 1) * 3))
      printf 'BEGIN; INSERT INTO sw_rows SELECT g, %d, repeat(md5(g::text), 4) FROM generate_series(%d, %d) g; UPDATE sw_rows SET n = n + 1 WHERE id = 0; COMMIT; SELECT pg_sleep(0.002);\n' \
        "$i" $((base + 1)) $((base + 3))
    done
  ) | psql_db "$DB" -o /dev/null -f - &
  WRITER_PID=$!
}

# End offset of the (one-partition) topic (default: sw_rows's); 0 before it exists.
end_offset() {
  local out topic=${1:-$TOPIC}
  out=$(timeout 15 kcat -Q -b "$DBZ_KAFKA" -t "$topic:0:-1" 2>/dev/null) || { echo 0; return; }
  printf '%s\n' "$out" | sed -n 's/.*offset \(-\{0,1\}[0-9]*\).*/\1/p' | head -n 1
}

# wait_records N WHAT: until the topic holds N records, checking that WHAT still runs.
wait_records() {
  local want=$1 check=$2 deadline=$(( $(date +%s) + TIMEOUT )) have
  while :; do
    have=$(end_offset)
    [ "${have:-0}" -ge "$want" ] && return 0
    "$check" || die "the side publishing exited while waiting for $want records (have ${have:-0})"
    [ "$(date +%s)" -lt "$deadline" ] || die "the topic has ${have:-0} records after ${TIMEOUT}s, waited for $want"
    sleep 0.2
  done
}

# The newest record of this connector's key in the offsets topic: "<partition>\t<key>\t<value>".
stored_offsets() {
  timeout 60 kcat -C -b "$DBZ_KAFKA" -t "$CONNECT_OFFSETS_TOPIC" -o beginning -e -q -f '%p\t%k\t%s\n' 2>/dev/null \
    | awk -F'\t' -v k="$OFFSET_KEY" '$2 == k' | tail -n 1
}

json_field() { printf '%s' "$1" | jq -r --arg f "$2" '.[$f] // empty'; }

slot_lsn() { sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$SLOT_DBZ'"; }

wait_slot_inactive() {
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until [ "$(sql "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$SLOT_DBZ' AND active")" = 0 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "slot $SLOT_DBZ still active after ${TIMEOUT}s"
    sleep 0.2
  done
}

connector_state() {
  rest "/connectors/$NAME/status" 2>/dev/null | sed -n 's/.*"connector":{"state":"\([A-Z]*\)".*/\1/p'
}

wait_connector() {
  local want=$1 deadline=$(( $(date +%s) + TIMEOUT ))
  until [ "$(connector_state)" = "$want" ]; do
    connect_alive || die "connect: worker exited (log: $CONNECT_RUN/logs/connect.log)"
    [ "$(date +%s)" -lt "$deadline" ] || die "connector $NAME not $want after ${TIMEOUT}s (state: $(connector_state))"
    sleep 0.2
  done
}

connect_alive() { connect_pid >/dev/null; }
pgcdc_alive() { pgcdc_pid >/dev/null; }

pgcdc_start() {
  PGCDC_PID=$(PGCDC_LOG=info launch "$RUN/pgcdc.pid" "$RUN/pgcdc-$1.log" \
    "$PGCDC_BIN" run --config "$RUN/connector.json" \
      --set bootstrap.servers="$DBZ_KAFKA" \
      --set offset.storage.topic="$CONNECT_OFFSETS_TOPIC" \
      --listeners "http://127.0.0.1:$PGCDC_REST_PORT")
  log "pgcdc: pid $PGCDC_PID, log $RUN/pgcdc-$1.log"
}

pgcdc_stop() {
  local pid
  pid=$(pgcdc_pid) || die "pgcdc is not running (log: $RUN/pgcdc-$1.log)"
  stop_pid "$pid" 40 pgcdc
}

rest_put() { curl -sS --max-time 30 -o /dev/null -w '%{http_code}' -X PUT "http://127.0.0.1:$DBZ_REST_PORT$1"; }

# ------------------------------------------------------------------------------ clean slate
phase "clean slate: database $DB, slot $SLOT_DBZ, a fresh broker $DBZ_KAFKA"
stop_all
drop_slots
rm -rf "$RUN"; mkdir -p "$RUN"
trap cleanup EXIT
sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
sql "CREATE DATABASE $DB" >/dev/null
psql_db "$DB" -c "CREATE TABLE sw_rows (id bigint PRIMARY KEY, n bigint NOT NULL, pad text);
  INSERT INTO sw_rows SELECT g, 0, md5(g::text) FROM generate_series(0, $((SNAPSHOT_ROWS - 1))) g;
  CREATE TABLE sw_incr (id bigint PRIMARY KEY, v text);
  INSERT INTO sw_incr SELECT g, md5(g::text) FROM generate_series(1, $INCR_ROWS) g;
  CREATE TABLE sw_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048));
  CREATE FUNCTION sw_slow(bigint) RETURNS boolean VOLATILE LANGUAGE plpgsql
    AS \$\$ BEGIN PERFORM pg_sleep(0.001); RETURN true; END \$\$;" >/dev/null
broker_start_fresh
connect_start_distributed

# One connector config for both: Debezium gets it over REST, pgcdc from the same file (plus
# the worker-level bootstrap.servers and offset.storage.topic).
{
  printf '{\n  "name": "%s",\n  "config": {\n' "$NAME"
  printf '    "%s": "%s",\n' \
    connector.class io.debezium.connector.postgresql.PostgresConnector \
    tasks.max 1 \
    database.hostname "$PG_HOST" \
    database.port "$PG_PORT" \
    database.user "$PG_USER" \
    database.password "$PG_PASSWORD" \
    database.dbname "$DB" \
    plugin.name pgoutput \
    slot.name "$SLOT_DBZ" \
    publication.name "$SLOT_DBZ" \
    publication.autocreate.mode filtered \
    table.include.list public.sw_rows,public.sw_incr,public.sw_signal \
    signal.data.collection public.sw_signal \
    incremental.snapshot.chunk.size "$INCR_CHUNK" \
    topic.prefix "$PREFIX" \
    snapshot.mode initial \
    key.converter org.apache.kafka.connect.json.JsonConverter \
    key.converter.schemas.enable true \
    value.converter org.apache.kafka.connect.json.JsonConverter \
    value.converter.schemas.enable true
  printf '    "name": "%s"\n  }\n}\n' "$NAME"
} >"$RUN/connector.json"

# ------------------------------------------------------------------------------ 1. debezium
phase "1. debezium: snapshot and stream"
connect_create "$RUN/connector.json"
wait_connector RUNNING
# The writer starts once the snapshot is in Kafka, so the snapshot holds exactly the seed rows.
wait_records "$SNAPSHOT_ROWS" connect_alive
writer_start
wait_records $((SNAPSHOT_ROWS + PER_PHASE)) connect_alive
code=$(rest_put "/connectors/$NAME/stop"); [ "$code" = 202 ] || [ "$code" = 204 ] || die "PUT /connectors/$NAME/stop answered $code"
wait_connector STOPPED
wait_slot_inactive
B1=$(end_offset)
DBZ_STORED=$(stored_offsets)
[ -n "$DBZ_STORED" ] || die "no offsets for $OFFSET_KEY in $CONNECT_OFFSETS_TOPIC after Debezium stopped"
phase "1. debezium stopped at topic offset $B1; slot at $(slot_lsn); stored: $(printf '%s' "$DBZ_STORED" | cut -f3)"

# ------------------------------------------------------------------------------ 2. pgcdc
phase "2. pgcdc: resume from Debezium's offsets"
pgcdc_start 2
wait_records $((B1 + PER_PHASE)) pgcdc_alive
pgcdc_stop 2
wait_slot_inactive
B2=$(end_offset)
PGCDC_STORED=$(stored_offsets)
phase "2. pgcdc stopped at topic offset $B2; slot at $(slot_lsn); stored: $(printf '%s' "$PGCDC_STORED" | cut -f3)"

# ------------------------------------------------------------------------------ 3. debezium again
phase "3. debezium: resume from pgcdc's offsets, with lsn.flush.mode=manual"
# Debezium confirms LSNs to the server only after Kafka Connect flushes offsets, so its slot
# lags the stored offsets; with lsn.flush.mode=manual it never confirms, the widest such lag:
# the slot stays where pgcdc left it, and phase 4 gets every transaction of phase 3 again.
jq '.config + {"lsn.flush.mode": "manual"}' "$RUN/connector.json" >"$RUN/connector-manual.json"
code=$(curl -sS --max-time 30 -o "$RUN/put-config.out" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
       --data @"$RUN/connector-manual.json" "http://127.0.0.1:$DBZ_REST_PORT/connectors/$NAME/config")
[ "$code" = 200 ] || die "PUT /connectors/$NAME/config answered $code: $(cat "$RUN/put-config.out")"
code=$(rest_put "/connectors/$NAME/resume"); [ "$code" = 202 ] || [ "$code" = 204 ] || die "PUT /connectors/$NAME/resume answered $code"
wait_connector RUNNING
wait_records $((B2 + PER_PHASE)) connect_alive
# Kill the worker once it has flushed offsets of its own: its last flush, not pgcdc's, is
# what the next phase resumes from.
deadline=$(( $(date +%s) + TIMEOUT ))
until DBZ3_STORED=$(stored_offsets) && [ -n "$DBZ3_STORED" ] && [ "$DBZ3_STORED" != "$PGCDC_STORED" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || die "Debezium flushed no offsets after resuming"
  sleep 0.5
done
connect_pid_now=$(connect_pid) || die "connect: worker exited"
kill -KILL "$connect_pid_now"
while kill -0 "$connect_pid_now" 2>/dev/null; do sleep 0.1; done
wait_slot_inactive
B3=$(end_offset)
DBZ3_STORED=$(stored_offsets)
P3=$(json_field "$(printf '%s' "$DBZ3_STORED" | cut -f3)" lsn_proc)
[ -n "$P3" ] || P3=$(json_field "$(printf '%s' "$DBZ3_STORED" | cut -f3)" lsn)
phase "3. debezium killed at topic offset $B3; slot at $(slot_lsn); stored: $(printf '%s' "$DBZ3_STORED" | cut -f3)"

# ------------------------------------------------------------------------------ 4. pgcdc again
phase "4. pgcdc: resume from the offsets Debezium flushed before it was killed"
pgcdc_start 4
wait_records $((B3 + PER_PHASE)) pgcdc_alive
writer_stop
XID=$({
  echo 'BEGIN;'
  echo 'SELECT (pg_current_xact_id()::text::bigint % 4294967296) AS final_xid \gset'
  echo 'UPDATE sw_rows SET n = n + 1 WHERE id = 0;'
  echo 'COMMIT;'
  echo '\echo :final_xid'
} | psql_db "$DB" -tA -f - | tail -n 1)
ROWS=$(psql_db "$DB" -tAc "SELECT max(id) FROM sw_rows")
COUNTER=$(psql_db "$DB" -tAc "SELECT n FROM sw_rows WHERE id = 0")
"$COMPARE" wait --side "pgcdc=$DBZ_KAFKA" --txid "$XID" --timeout "$TIMEOUT" --topic "$TOPIC" \
  || die "the final transaction did not arrive (log: $RUN/pgcdc-4.log)"
pgcdc_stop 4
grep -h 'caught up with the stored offsets\|slot is behind the stored offsets' "$RUN"/pgcdc-*.log >"$RUN/skips.log" || true

# ------------------------------------------------------------------------------ verdict
phase "checking $TOPIC: rows 0..$ROWS, counter 1..$COUNTER"
set +e
{
  echo "switch run: pgcdc $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), debezium-connector-postgres $(cut -d: -f2 "$PLUGINS/.complete"), Kafka Connect distributed"
  "$COMPARE" switch-check --brokers "$DBZ_KAFKA" --topic "$TOPIC" --rows "$ROWS" --counter "$COUNTER" \
    --snapshot-rows "$SNAPSHOT_ROWS" --timeout "$TIMEOUT" \
    --phase "debezium:0:first" --phase "pgcdc:$B1:none" \
    --phase "debezium-again:$B2:one-tx" --phase "pgcdc-again:$B3:after-lsn=$P3"
} | tee "$RUN/report.txt"
RC=${PIPESTATUS[0]}
[ "$RC" = 0 ] && RC=$(( $(grep -c '^FAILED' "$RUN/report.txt") > 0 ))
set -e

# The offsets records: Debezium's and pgcdc's, for the same key.
dbz_part=$(printf '%s' "$DBZ_STORED" | cut -f1); pg_part=$(printf '%s' "$PGCDC_STORED" | cut -f1)
{
  echo "offsets topic $CONNECT_OFFSETS_TOPIC, key $OFFSET_KEY"
  printf '  written by debezium: partition %s value %s\n' "$dbz_part" "$(printf '%s' "$DBZ_STORED" | cut -f3)"
  printf '  written by pgcdc:    partition %s value %s\n' "$pg_part" "$(printf '%s' "$PGCDC_STORED" | cut -f3)"
  sed 's/^/  pgcdc: /' "$RUN/skips.log"
} | tee -a "$RUN/report.txt"
if [ -z "$PGCDC_STORED" ] || [ "$dbz_part" != "$pg_part" ]; then
  echo "FAILED: pgcdc's offsets record is missing or on another partition than Debezium's" | tee -a "$RUN/report.txt"
  RC=1
fi
extra=$(jq -rn --argjson d "$(printf '%s' "$DBZ_STORED" | cut -f3)" --argjson p "$(printf '%s' "$PGCDC_STORED" | cut -f3)" \
  '($p | keys) - ($d | keys) | join(",")' 2>/dev/null || echo '?')
if [ -n "$extra" ]; then
  echo "FAILED: pgcdc's offsets have fields Debezium's do not: $extra" | tee -a "$RUN/report.txt"
  RC=1
fi
# ------------------------------------------------------------------------------ 5. incremental
# "<topic offset> <id>" of each incremental snapshot record of sw_incr.
incr_reads() {
  timeout 60 kcat -C -b "$DBZ_KAFKA" -t "$INCR_TOPIC" -o beginning -e -q -f '%o\t%s\n' 2>/dev/null \
    | jq -rR 'split("\t") as [$o, $v] | ($v | fromjson? // {}) as $j
              | select($j.payload.op == "r" and $j.payload.source.snapshot == "incremental")
              | "\($o) \($j.payload.after.id)"'
}

phase "5. pgcdc: an incremental snapshot of sw_incr, stopped in the middle"
pgcdc_start 5
psql_db "$DB" -c "INSERT INTO sw_signal VALUES ('switch-incremental', 'execute-snapshot',
  '{\"data-collections\": [\"public.sw_incr\"], \"type\": \"incremental\",
    \"additional-conditions\": [{\"data-collection\": \"public.sw_incr\", \"filter\": \"sw_slow(id)\"}]}')" >/dev/null
deadline=$(( $(date +%s) + TIMEOUT ))
until stored_offsets | cut -f3 | jq -e 'has("incremental_snapshot_primary_key")' >/dev/null 2>&1; do
  pgcdc_alive || die "pgcdc exited during the incremental snapshot (log: $RUN/pgcdc-5.log)"
  [ "$(date +%s)" -lt "$deadline" ] || die "pgcdc stored no incremental snapshot progress after ${TIMEOUT}s"
  sleep 0.2
done
pgcdc_stop 5
wait_slot_inactive
I5=$(end_offset "$INCR_TOPIC")
INCR_STORED=$(stored_offsets | cut -f3)
printf '%s' "$INCR_STORED" | jq -e '.incremental_snapshot_collections // empty' >/dev/null \
  || die "pgcdc completed the incremental snapshot before it was stopped (stored: $INCR_STORED)"
phase "5. pgcdc stopped at $INCR_TOPIC offset $I5; stored: $INCR_STORED"

# ------------------------------------------------------------------------------ 6. debezium
phase "6. debezium: the worker starts again and resumes the incremental snapshot from pgcdc's offsets"
connect_start_distributed
wait_connector RUNNING
deadline=$(( $(date +%s) + TIMEOUT ))
until [ "$(incr_reads | awk '{ print $2 }' | sort -u | wc -l)" -ge "$INCR_ROWS" ]; do
  connect_alive || die "connect: worker exited (log: $CONNECT_RUN/logs/connect.log)"
  if [ "$(date +%s)" -ge "$deadline" ]; then
    log "not every row of sw_incr read after ${TIMEOUT}s"
    break
  fi
  sleep 1
done
incr_reads >"$RUN/incremental.reads"
read -r by_pgcdc by_debezium both distinct < <(awk -v cut="$I5" '
  { if ($1 < cut) p[$2] = 1; else d[$2] = 1; all[$2] = 1 }
  END { np = 0; nd = 0; nb = 0; na = 0
        for (k in p) { np++; if (k in d) nb++ }
        for (k in d) nd++
        for (k in all) na++
        print np, nd, nb, na }' "$RUN/incremental.reads")
{
  echo "incremental snapshot of sw_incr ($INCR_ROWS rows, chunks of $INCR_CHUNK) switched from pgcdc to debezium:"
  echo "  read by pgcdc $by_pgcdc, by debezium $by_debezium, by both $both, distinct $distinct"
  if [ "$distinct" -eq "$INCR_ROWS" ] && [ "$by_pgcdc" -gt 0 ] && [ "$by_debezium" -gt 0 ] \
     && [ "$both" -le $((2 * INCR_CHUNK)) ]; then
    echo "  ok: debezium resumed where pgcdc stopped"
  else
    echo "FAILED: every row once by one side, debezium re-reading at most $((2 * INCR_CHUNK)) rows pgcdc read"
  fi
} | tee -a "$RUN/report.txt"
grep -q '^FAILED' "$RUN/report.txt" && RC=1
phase "finished: exit $RC (report: $RUN/report.txt)"
exit "$RC"
