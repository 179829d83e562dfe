#!/usr/bin/env bash
# A real failover: PostgreSQL 17 primary and physical standby, a failover slot, the primary
# killed, the standby promoted, and pgcdc following it through its host list.
#
# Usage: scripts/test-failover.sh
#
# Builds a throwaway pair under target/failover/ with the npm PostgreSQL 17 binaries
# (scripts/services.sh installs them): a primary on 127.0.0.1:25437 with a physical slot for
# the standby, named in synchronized_standby_slots; a standby on 127.0.0.1:25438 made without
# pg_basebackup (pg_backup_start, a file copy, pg_backup_stop and its backup_label), with
# sync_replication_slots=on, hot_standby_feedback=on, primary_slot_name and dbname in
# primary_conninfo. Then pgcdc (target/debug/pgcdc, or PGCDC_BIN) runs with slot.failover=true,
# snapshot.mode=no_data and database.hostname=127.0.0.1,127.0.0.1 / database.port=25437,25438;
# 1,000 rows are written on the primary and delivered; once the standby's copy of the slot is
# synchronized, the primary is killed (immediate stop) and the standby promoted; 1,000 more rows
# are written on the new primary. Checks: every row 1..2000 arrived (none lost), no snapshot
# record, duplicates only of rows published before the failover (the synchronized slot may lag
# the old one: at-least-once), the connector logged the promotion (the offsets' cluster check
# saw the later timeline). Before the failover, a second connector decodes on the standby
# alone (PostgreSQL 16+: its slot made there, its snapshot read there) and must read the same
# rows, and one with a heartbeat action query must be refused there. Everything is removed at the
# end, also on failure. About a minute.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

log() { printf '[failover %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

# Below Linux's ephemeral range (32768-60999): a client socket of a test running just before
# can never hold them.
PRIMARY_PORT=25437
STANDBY_PORT=25438
BASE="$ROOT/target/failover"
PGCDC=${PGCDC_BIN:-$ROOT/target/debug/pgcdc}
PREFIX=failover$(date +%s)
SLOT=$PREFIX
DB=failover
KAFKA_LIB="$ROOT/target/services/kafka/lib"

scripts/services.sh start kafka
scripts/services.sh start pg17
BIN=$(scripts/services.sh pg-bin pg17)
CLIENT=$(scripts/services.sh pg-bin pg)
eval "$(scripts/services.sh env)"
KAFKA=$PGCDC_TEST_KAFKA
scripts/services.sh stop pg17   # only its binaries are needed
[ -x "$PGCDC" ] || (cargo build --bin pgcdc >&2)

PGCDC_PID=""
SB_PID=""
cleanup() {
  [ -z "$SB_PID" ] || { kill -KILL "$SB_PID" 2>/dev/null; wait "$SB_PID" 2>/dev/null; } || true
  if [ -n "$PGCDC_PID" ]; then
    kill -KILL "$PGCDC_PID" 2>/dev/null || true
    wait "$PGCDC_PID" 2>/dev/null || true
    tail -n 40 "$BASE/pgcdc.log" >&2 || true
  fi
  for d in primary standby; do
    [ -f "$BASE/$d/data/postmaster.pid" ] && runuser -u postgres -- "$BIN/pg_ctl" -D "$BASE/$d/data" -m immediate -w stop >/dev/null 2>&1
  done
  if [ -d "$KAFKA_LIB" ]; then
    java -Xmx256m -cp "$KAFKA_LIB/*" bench/DeleteTopics.java "$KAFKA" "$PREFIX(sb)?(\\..*)?" >/dev/null 2>&1 || true
  fi
  rm -rf "$BASE"
}
trap cleanup EXIT

as_pg() { (cd / && runuser -u postgres -- "$@"); }
q() { # port db sql...
  local port=$1 db=$2; shift 2
  PGPASSWORD=postgres "$CLIENT/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"
}
wait_until() { # seconds what command...
  local limit=$1 what=$2 deadline; shift 2
  deadline=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}

# --- the primary -------------------------------------------------------------------------------
rm -rf "$BASE"; mkdir -p "$BASE/primary" "$BASE/standby" "$BASE/run"
chmod o+x "$ROOT" "$ROOT/target"
chown -R postgres:postgres "$BASE"; chmod 700 "$BASE/primary" "$BASE/standby"
as_pg "$BIN/initdb" -D "$BASE/primary/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
  --locale=C.UTF-8 >"$BASE/initdb.log" 2>&1 || { cat "$BASE/initdb.log" >&2; die "initdb"; }
cat >>"$BASE/primary/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PRIMARY_PORT
unix_socket_directories = '$BASE/run'
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
fsync = off
synchronized_standby_slots = 'standby_slot'
EOF
echo "host replication all 127.0.0.1/32 scram-sha-256" >>"$BASE/primary/data/pg_hba.conf"
as_pg "$BIN/pg_ctl" -D "$BASE/primary/data" -l "$BASE/primary/log" -w start >/dev/null
as_pg "$CLIENT/psql" -X -q -h "$BASE/run" -p "$PRIMARY_PORT" -U postgres -d postgres \
  -c "ALTER ROLE postgres PASSWORD 'postgres'" \
  -c "SELECT pg_create_physical_replication_slot('standby_slot', true)" >/dev/null
q "$PRIMARY_PORT" postgres -c "CREATE DATABASE $DB"
q "$PRIMARY_PORT" "$DB" -c "CREATE TABLE t (id int PRIMARY KEY, v text)"
log "primary: PostgreSQL $(q "$PRIMARY_PORT" postgres -c 'SHOW server_version') on $PRIMARY_PORT"

# --- the standby, without pg_basebackup --------------------------------------------------------
# One session: start the backup, copy the files, stop it and keep its backup_label.
PGPASSWORD=postgres "$CLIENT/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PRIMARY_PORT" \
  -U postgres -d postgres >"$BASE/backup_label" <<EOF
\o /dev/null
SELECT pg_backup_start('pgcdc-standby', true);
\! tar -C '$BASE/primary/data' --exclude=./postmaster.pid --exclude=./postmaster.opts --exclude='./pg_wal/*' --exclude='./pg_replslot/*' -cf - . | tar -C '$BASE/standby' --one-top-level=data -xf -
\o
SELECT labelfile FROM pg_backup_stop(false);
EOF
S="$BASE/standby/data"
cp "$BASE/backup_label" "$S/backup_label"
sed -i "s/^port = $PRIMARY_PORT/port = $STANDBY_PORT/; /^synchronized_standby_slots/d" "$S/postgresql.conf"
cat >>"$S/postgresql.conf" <<EOF
primary_conninfo = 'host=127.0.0.1 port=$PRIMARY_PORT user=postgres password=postgres dbname=postgres application_name=standby'
primary_slot_name = 'standby_slot'
hot_standby_feedback = on
sync_replication_slots = on
EOF
touch "$S/standby.signal"
chown -R postgres:postgres "$S"; chmod 700 "$S"
as_pg "$BIN/pg_ctl" -D "$S" -l "$BASE/standby/log" -w start >/dev/null \
  || { tail -n 20 "$BASE/standby/log" >&2; die "the standby did not start"; }
standby_streaming() { [ "$(q "$PRIMARY_PORT" postgres -c "SELECT state FROM pg_stat_replication WHERE application_name = 'standby'")" = streaming ]; }
wait_until 60 "the standby to stream" standby_streaming
log "standby: in recovery on $STANDBY_PORT, streaming from the primary"

# --- pgcdc with a failover slot and both hosts ------------------------------------------------
cat >"$BASE/connector.properties" <<EOF
name=$PREFIX
connector.class=io.debezium.connector.postgresql.PostgresConnector
plugin.name=pgoutput
database.hostname=127.0.0.1,127.0.0.1
database.port=$PRIMARY_PORT,$STANDBY_PORT
database.user=postgres
database.password=postgres
database.dbname=$DB
database.sslmode=disable
slot.name=$SLOT
slot.failover=true
publication.name=failover_pub
snapshot.mode=no_data
topic.prefix=$PREFIX
bootstrap.servers=$KAFKA
offset.storage.file.filename=$BASE/offsets.json
status.update.interval.ms=200
offset.flush.interval.ms=200
errors.max.retries=-1
retriable.restart.connector.wait.ms=500
EOF
"$PGCDC" run --config "$BASE/connector.properties" --listeners http://127.0.0.1:0 \
  >"$BASE/pgcdc.stdout" 2>"$BASE/pgcdc.log" &
PGCDC_PID=$!
slot_failover() { [ "$(q "$PRIMARY_PORT" postgres -c "SELECT failover FROM pg_replication_slots WHERE slot_name = '$SLOT'")" = t ]; }
wait_until 60 "pgcdc's failover slot on the primary" slot_failover

records() { # [topic prefix] -> "count distinct snapshot_records"
  timeout 60 kcat -C -b "$KAFKA" -t "${1:-$PREFIX}.public.t" -o beginning -e -q -f '%s\n' 2>/dev/null \
    | jq -r 'select(.payload.after != null) | "\(.payload.after.id) \(.payload.op)"' \
    | awk '{ n++; seen[$1]++; if ($2 == "r") r++ } END { printf "%d %d %d\n", n, length(seen), r }'
}
distinct_at_least() { local d; d=$(records "${2:-$PREFIX}" | awk '{ print $2 }'); [ "${d:-0}" -ge "$1" ]; }

for i in $(seq 0 9); do
  q "$PRIMARY_PORT" "$DB" -c "INSERT INTO t SELECT g, 'before' FROM generate_series($(( i * 100 + 1 )), $(( i * 100 + 100 ))) g"
done
wait_until 120 "the first 1,000 rows in Kafka" distinct_at_least 1000
PRIMARY_CONFIRMED=$(q "$PRIMARY_PORT" postgres -c "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$SLOT'")
slot_synced() {
  [ "$(q "$STANDBY_PORT" postgres -c "SELECT synced AND confirmed_flush_lsn >= '$PRIMARY_CONFIRMED'::pg_lsn FROM pg_replication_slots WHERE slot_name = '$SLOT'")" = t ]
}
wait_until 120 "the standby's copy of the slot to reach $PRIMARY_CONFIRMED" slot_synced
log "1,000 rows delivered; the slot is synchronized on the standby at $PRIMARY_CONFIRMED or later"

# --- decoding on the standby (PostgreSQL 16+) --------------------------------------------------
# A second connector reads the standby alone: its slot is created there (the primary's
# running-transactions records let it reach a consistent point: logged on demand here), its
# snapshot is read there, and the publication comes from the primary with the WAL.
SB=${PREFIX}sb
sed -e "s/^name=.*/name=$SB/; s/^slot.name=.*/slot.name=$SB/; s/^topic.prefix=.*/topic.prefix=$SB/" \
    -e "s/^database.hostname=.*/database.hostname=127.0.0.1/; s/^database.port=.*/database.port=$STANDBY_PORT/" \
    -e "s/^snapshot.mode=.*/snapshot.mode=initial/; /^slot.failover/d" \
    -e "s|^offset.storage.file.filename=.*|offset.storage.file.filename=$BASE/standby-offsets.json|" \
    "$BASE/connector.properties" >"$BASE/standby.properties"
"$PGCDC" run --config "$BASE/standby.properties" --listeners http://127.0.0.1:0 \
  >"$BASE/standby-pgcdc.stdout" 2>"$BASE/standby-pgcdc.log" &
SB_PID=$!
standby_slot() {
  q "$PRIMARY_PORT" postgres -c "SELECT pg_log_standby_snapshot()" >/dev/null
  [ -n "$(q "$STANDBY_PORT" postgres -c "SELECT 1 FROM pg_replication_slots WHERE slot_name = '$SB' AND active")" ]
}
wait_until 120 "the standby connector's slot on the standby" standby_slot
wait_until 120 "the 1,000 rows read on the standby" distinct_at_least 1000 "$SB"
kill -TERM "$SB_PID"; rc=0; wait "$SB_PID" || rc=$?; SB_PID=""
[ "$rc" = 0 ] || { tail -n 20 "$BASE/standby-pgcdc.log" >&2; die "the standby connector exited with $rc"; }
# A heartbeat action query would have to write: refused at start, saying why.
{ cat "$BASE/standby.properties"; echo "heartbeat.interval.ms=1000"; echo "heartbeat.action.query=SELECT 1"; } \
  >"$BASE/standby-heartbeat.properties"
rc=0; timeout 60 "$PGCDC" run --config "$BASE/standby-heartbeat.properties" --listeners http://127.0.0.1:0 \
  >/dev/null 2>"$BASE/standby-heartbeat.log" || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || die "a heartbeat action query on a standby was not refused (exit $rc)"
grep -q "heartbeat.action.query is set, but the server is a standby" "$BASE/standby-heartbeat.log" \
  || { tail -n 5 "$BASE/standby-heartbeat.log" >&2; die "the refusal does not say why"; }
log "decoding on the standby: snapshot and stream read there ($(records "$SB" | awk '{ print $2 }') rows); a heartbeat action query refused"

# --- failover ---------------------------------------------------------------------------------
as_pg "$BIN/pg_ctl" -D "$BASE/primary/data" -m immediate -w stop >/dev/null
log "primary killed"
q "$STANDBY_PORT" postgres -c "SELECT pg_promote(true, 60)" >/dev/null
log "standby promoted: now on WAL file $(q "$STANDBY_PORT" postgres -c 'SELECT pg_walfile_name(pg_current_wal_lsn())') (its first 8 digits: the timeline)"
for i in $(seq 10 19); do
  q "$STANDBY_PORT" "$DB" -c "INSERT INTO t SELECT g, 'after' FROM generate_series($(( i * 100 + 1 )), $(( i * 100 + 100 ))) g"
done
wait_until 180 "all 2,000 rows in Kafka after the failover" distinct_at_least 2000
kill -0 "$PGCDC_PID" 2>/dev/null || { tail -n 30 "$BASE/pgcdc.log" >&2; die "pgcdc exited"; }
read -r total distinct snapshot_records <<<"$(records)"
[ "$distinct" = 2000 ] || die "$distinct distinct rows in Kafka, expected 2000"
[ "$snapshot_records" = 0 ] || die "$snapshot_records snapshot records: the failover took a snapshot"
duplicates=$(( total - distinct ))
[ "$duplicates" -le 1000 ] || die "$duplicates duplicates: more than the rows published before the failover"
grep -q 'later timeline' "$BASE/pgcdc.log" || die "pgcdc did not log the promotion (the cluster check)"
kill -TERM "$PGCDC_PID"
rc=0; wait "$PGCDC_PID" || rc=$?
PGCDC_PID=""
[ "$rc" = 0 ] || die "pgcdc exited with $rc after SIGTERM"
log "OK: 2,000 rows, none lost, $duplicates published again after the failover (at-least-once), no snapshot; pgcdc followed the promotion"
