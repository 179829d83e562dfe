#!/usr/bin/env bash
# Three-way throughput benchmark on the same logical-decoding backlog: pg_recvlogical (the
# ceiling), pgcdc (target/release/pgcdc) and Debezium 3.6.1.Final's PostgreSQL connector on
# Kafka Connect, one after the other (never concurrently), each on its own copy of one slot.
#
# Usage: scripts/bench-compare.sh [--quick | --smoke] [--binary-tuples] [--repeat N] [--help]
#        scripts/bench-compare.sh --delete-topics
#   --quick          every workload at 1/10 of its size
#   --smoke          tiny sizes, all three systems (for CI): fails when a count is wrong or a
#                    system fails, never because the machine is slow; about two minutes
#   --binary-tuples  also drain the backlog with pgoutput's binary option: pg_recvlogical with
#                    -o binary=true and pgcdc with pgcdc.pgoutput.binary=true, each on a fifth and
#                    sixth copy of the slot, and report the walsender's cpu and the drain rate of
#                    both modes side by side
#   --repeat N       run every workload N times (1 to 9), each time on a fresh load with the three
#                    systems one after the other, so that they alternate; the report gives each
#                    run and, per workload, the min, median and max of each rate and ratio
#                    (single runs on a 2-cpu machine vary by up to 2x from one hour to the next)
#   --delete-topics  delete the Kafka topics left by killed runs (cmp<stamp><workload>{pgcdc,dbz}.*), exit
#
# Workloads (BENCH_WORKLOADS, default "bulk small wide toast", run one after the other):
#   bulk   1,000,000 rows in 100 transactions of 10,000 into scripts/bench.sh's table t
#   small  100,000 single-row transactions into a table of the same shape
#   wide   200,000 rows of a 50-column table of mixed types, in transactions of 10,000
#   toast  50,000 rows with an 8 KiB text column stored out of line (STORAGE EXTERNAL: not
#          compressed), in transactions of 1,000
#   snapshot  the initial snapshot of 2,000,000 rows: COPY, pgcdc and Debezium at 1 and 4
#          snapshot.max.threads, JSON and Avro; run after the others by scripts/bench-snapshot.sh
#          (same mode flag; see its --help), with its own report
# For each workload: a fresh database (pgcdc_compare) with the table and publication cmp_pub;
# one pgoutput slot (cmp_recvlogical) copied with pg_copy_logical_replication_slot into
# cmp_pgcdc and cmp_debezium, so all three start at the same LSN; the load while nothing
# consumes; the exact end LSN of the last commit (pg_walinspect); then, one after the other:
#   1. pg_recvlogical --endpos=<end LSN> -f /dev/null: the ceiling, timed from launch to exit;
#   2. pgcdc at its default producer settings (snapshot.mode=no_data), from process start until
#      its slot's confirmed_flush_lsn reaches the end LSN; its topic must then hold every row;
#   3. Debezium on a Kafka Connect worker started once before the first workload (standalone,
#      REST 127.0.0.1:58183, state in target/bench/compare-connect/, JVM -Xms256m -Xmx2g), timed
#      from POST /connectors until its topic holds every row (sum of high - low watermarks:
#      Debezium confirms LSNs to the slot only at offset flushes).
# pgcdc and Debezium publish to the main broker of scripts/services.sh, each to its own topic
# prefix, JsonConverter with schemas for key and value, acks=all. Report on stdout and in
# target/bench/compare-<UTC stamp>.json, logs in target/bench/compare-<stamp>/. Slots, database,
# topics and the Connect worker are removed at the end, also on failure and Ctrl-C.
#
# Environment (defaults in brackets):
#   BENCH_WORKLOADS ["bulk small wide toast"]  which workloads, in this order
#   BENCH_<W>_ROWS, BENCH_<W>_TX_ROWS     rows and rows per transaction of workload W (BULK,
#                                         SMALL, WIDE, TOAST), overriding the mode's size
#   BENCH_SET [""]          extra pgcdc settings, whitespace-separated key=value
#   BENCH_DBZ_SET [""]      extra (or replaced) Debezium connector settings, key=value
#   BENCH_CONNECT_HEAP ["-Xms256m -Xmx2g"]  heap options of the Connect worker's JVM
#   BENCH_PG_SSLMODE [disable]  sslmode of the three consumers
#   BENCH_TIMEOUT [900]     seconds allowed for each load and for each system's run
#   BENCH_NO_BUILD [0]      1: use target/release/pgcdc as it is, never build
#   BENCH_PGCDC_BIN [target/release/pgcdc]  the pgcdc binary (CI's smoke run uses the debug build,
#                           with BENCH_NO_BUILD=1; its rates then mean nothing)
#   BENCH_PGCDC_COMMIT [""]  the commit BENCH_PGCDC_BIN was built from, for the report (an older
#                           build to compare with: its report says "unknown" without it)
#   BENCH_SERVICES [start]  running: use the services already running at the addresses of
#                           scripts/services.sh env
#   BENCH_KAFKA_LIB [target/services/kafka/lib]  the broker's jars (topic deletion, record counts)
#   BENCH_COMPARE_DB [pgcdc_compare]  the database created and dropped for each workload
#   PGCDC_LOG [info]        pgcdc's log filter
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
# The Kafka Connect helpers of the differential harness (launch, connect_*, rest), then the
# bench helpers (whose now() replaces the harness's).
# shellcheck source=scripts/debezium/lib.sh
. "$ROOT/scripts/debezium/lib.sh"
# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"
log() { printf 'bench-compare: %s\n' "$*" >&2; }
die() { printf 'bench-compare: ERROR: %s\n' "$*" >&2; exit 1; }
unset PGOPTIONS   # set by the harness's lib.sh; the consumers run with the server's defaults

usage() { sed -n '2,/^[^#]/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

MODE=default
DELETE_TOPICS_ONLY=0
BINARY=0
REPEAT=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;;
    --smoke) MODE=smoke ;;
    --binary-tuples) BINARY=1 ;;
    --repeat) REPEAT=${2:-}; shift ;;
    --delete-topics) DELETE_TOPICS_ONLY=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done

# Rows and rows per transaction of each workload: default, --quick, --smoke.
declare -A SIZES=(
  [bulk]="1000000 10000 100000 10000 5000 1000"
  [small]="100000 1 10000 1 500 1"
  [wide]="200000 10000 20000 10000 2000 1000"
  [toast]="50000 1000 5000 1000 200 100"
)
read -r -a WORKLOADS <<<"${BENCH_WORKLOADS:-bulk small wide toast}"
# The snapshot workload has its own script and report: run after the others.
SNAPSHOT_WORKLOAD=0
for i in "${!WORKLOADS[@]}"; do
  if [ "${WORKLOADS[$i]}" = snapshot ]; then SNAPSHOT_WORKLOAD=1; unset 'WORKLOADS[i]'; fi
done
WORKLOADS=(${WORKLOADS[@]+"${WORKLOADS[@]}"})
if [ "$SNAPSHOT_WORKLOAD" = 1 ] && [ ${#WORKLOADS[@]} -eq 0 ]; then
  snapshot_args=()
  [ "$MODE" = default ] || snapshot_args=("--$MODE")
  exec "$ROOT/scripts/bench-snapshot.sh" ${snapshot_args[@]+"${snapshot_args[@]}"}
fi
EXTRA_SET=${BENCH_SET:-}
DBZ_EXTRA_SET=${BENCH_DBZ_SET:-}
read -r -a CONNECT_HEAP <<<"${BENCH_CONNECT_HEAP:--Xms256m -Xmx2g}"   # read by lib.sh's connect_launch
SSLMODE=${BENCH_PG_SSLMODE:-disable}
RUN_TIMEOUT=${BENCH_TIMEOUT:-900}
NO_BUILD=${BENCH_NO_BUILD:-0}
SERVICES=${BENCH_SERVICES:-start}
KAFKA_LIB=${BENCH_KAFKA_LIB:-$ROOT/target/services/kafka/lib}
DB=${BENCH_COMPARE_DB:-pgcdc_compare}
STATUS_MS=100
export PGCDC_LOG=${PGCDC_LOG:-info}

[ ${#WORKLOADS[@]} -gt 0 ] || die "BENCH_WORKLOADS is empty"
[[ "$REPEAT" =~ ^[1-9]$ ]] || die "--repeat $REPEAT: expected a number from 1 to 9"
for w in "${WORKLOADS[@]}"; do
  [ -n "${SIZES[$w]:-}" ] || die "BENCH_WORKLOADS: unknown workload '$w' (bulk, small, wide, toast, snapshot)"
done
{ is_uint "$RUN_TIMEOUT" && [ "$RUN_TIMEOUT" -gt 0 ]; } || die "BENCH_TIMEOUT=$RUN_TIMEOUT: expected a positive integer"
[[ "$DB" =~ ^[a-z_][a-z0-9_]*$ ]] || die "BENCH_COMPARE_DB=$DB: use lower-case letters, digits and _"
case "$SERVICES" in start|running) ;; *) die "BENCH_SERVICES=$SERVICES: expected start or running" ;; esac
case "$SSLMODE" in disable|allow|prefer|require) ;; *) die "BENCH_PG_SSLMODE=$SSLMODE: expected disable, allow, prefer or require" ;; esac

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$ROOT/target/bench"
RUN="$OUT/compare-$STAMP"
JSON="$OUT/compare-$STAMP.json"
PUB=cmp_pub
SLOT_RECV=cmp_recvlogical
SLOT_PGCDC=cmp_pgcdc
SLOT_DBZ=cmp_debezium
SLOT_RECV_BIN=cmp_recvlogical_bin
SLOT_PGCDC_BIN=cmp_pgcdc_bin
SLOTS=("$SLOT_RECV" "$SLOT_PGCDC" "$SLOT_DBZ" "$SLOT_RECV_BIN" "$SLOT_PGCDC_BIN")
PGCDC="${BENCH_PGCDC_BIN:-$ROOT/target/release/pgcdc}"
TOPIC_REGEX_ALL='cmp[0-9]{8}T[0-9]{6}Z[a-z]+(pgcdc|pgcdcbin|dbz)\..*'
TOPIC_REGEX_RUN="cmp${STAMP}[a-z]+(pgcdc|pgcdcbin|dbz)\\..*"
BENCH_APP=pgcdc_compare       # application_name of q (bench-lib.sh)
CLASSES="$OUT/classes"        # bench/WaitRecords.java, compiled
# This bench's own Connect worker, run by scripts/debezium/lib.sh's functions with another REST
# port and state directory than the harness's (58083, target/debezium/connect), so the two never
# collide; its broker (CONNECT_BOOTSTRAP) is set once the services are known.
DBZ_REST_PORT=58183
CONNECT_RUN="$OUT/compare-connect"
DBZ_OFFSET_FLUSH_MS=60000     # Connect's default offset.flush.interval.ms
mkdir -p "$OUT"

[ "$DELETE_TOPICS_ONLY" = 1 ] || { mkdir -p "$RUN"; log "run directory: $RUN"; }
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
bench_services "$SERVICES"
CONNECT_BOOTSTRAP=$KAFKA
if [ "$DELETE_TOPICS_ONLY" = 1 ]; then
  delete_topics "$TOPIC_REGEX_ALL"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# Prerequisites
# ---------------------------------------------------------------------------------------------

debezium_bench_setup
CONN_BASE="host=$PG_HOST port=$PG_PORT user=$PG_USER sslmode=$SSLMODE"

# ---------------------------------------------------------------------------------------------
# Clean-up (also on failure / Ctrl-C)
# ---------------------------------------------------------------------------------------------

PGCDC_PID="" TIME_PID="" RECV_PID="" WAITER_PID="" WR_PID="" SAMPLER_PID="" WATCHDOG_PID=""
CONNECT_PID="" OBJECTS_MAY_EXIST=0 TOPICS_MAY_EXIST=0


cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_bg "$WATCHDOG_PID" 5 watchdog
  stop_bg "$SAMPLER_PID" 5 sampler
  stop_bg "$WR_PID" 5 WaitRecords
  stop_bg "$WAITER_PID" 5 waiter
  stop_bg "$RECV_PID" 10 pg_recvlogical
  stop_bg "$PGCDC_PID" 40 pgcdc
  stop_bg "$TIME_PID" 5 time
  if [ -n "$CONNECT_PID" ]; then
    log "stopping the Connect worker (pid $CONNECT_PID)"
    connect_stop
  fi
  if [ "$OBJECTS_MAY_EXIST" = 1 ]; then
    log "cleaning up: dropping slots, publication and database $DB"
    drop_bench_objects "$DB" "$PUB" "${SLOTS[@]}"
  fi
  [ "$TOPICS_MAY_EXIST" = 0 ] || delete_topics "$TOPIC_REGEX_RUN"
  [ "$rc" = 0 ] || log "FAILED (exit $rc); logs in $RUN"
  exit "$rc"
}
trap cleanup EXIT
# Any unexpected failure says where it happened (set -e alone would exit silently).
set -E
trap 'log "ERROR: command failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

active=$(q postgres -c "SELECT string_agg(slot_name || ' (pid ' || active_pid || ')', ', ') FROM pg_replication_slots WHERE slot_name IN ('$SLOT_RECV', '$SLOT_PGCDC', '$SLOT_DBZ', '$SLOT_RECV_BIN', '$SLOT_PGCDC_BIN') AND active")
[ -z "$active" ] || die "slots in use, is another bench-compare running? $active"

# ---------------------------------------------------------------------------------------------
# Measurement helpers
# ---------------------------------------------------------------------------------------------

# Ticks the hypervisor ran something else while this VM wanted a cpu (steal, /proc/stat).
steal_ticks() { awk '/^cpu / { print $9 }' /proc/stat; }
connect_ticks() { if [ -n "$CONNECT_PID" ]; then cpu_ticks "$CONNECT_PID"; else echo 0; fi; }
per_million() { awk -v c="$1" -v n="$2" 'BEGIN { if (c != "null" && c != "" && n > 0) printf "%.2f", c / n * 1000000; else printf "null" }'; }
# Busy cpu-s of everything but the listed cpu-s figures (null counts 0): HOST_BUSY FIGURE...
other_cpu_s() { awk -v h="$1" 'BEGIN { s = h; for (i = 2; i < ARGC; i++) if (ARGV[i] != "null") s -= ARGV[i]; printf "%.2f", s }' "$@"; }
since() { if [ -n "$1" ]; then fsub "$1" "$2"; else echo null; fi; }   # t t0 -> seconds, or null
walsender_pid() { q postgres -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$1' AND active"; }

# Every process's cpu ticks: pid, ticks, name (to say who "other processes" were).
proc_snapshot() {
  # (cat fails for a process that exits meanwhile; the others are still read)
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk '{ i = index($0, " ("); j = match($0, /\) [A-Za-z] /)
    split(substr($0, j + 2), f, " "); print $1 "\t" f[12] + f[13] "\t" substr($0, i + 2, j - i - 2) }'
}
# other_top BEFORE AFTER PID...: the three processes, other than PID..., that used the most cpu
# between two snapshots (0.1 s at least): "name[pid] cpu-s, ...".
other_top() {
  local before=$1 after=$2; shift 2
  awk -F'\t' -v h="$CLK_TCK" -v skip=" $* " 'FILENAME == ARGV[1] { t0[$1] = $2; next }
    index(skip, " " $1 " ") == 0 { d = ($2 - t0[$1]) / h; if (d >= 0.1) printf "%.2f\t%s[%s]\n", d, $3, $1 }' "$before" "$after" \
    | sort -rn | awk -F'\t' 'NR <= 3 { printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }'
}


# Background: the cpu ticks of the walsender serving slot $1, appended to $2 every 50 ms until
# it exits (pg_recvlogical's walsender exits with it, so its last reading is kept).
walsender_sampler() {
  local slot=$1 file=$2 pid="" line f deadline=$(( $(date +%s) + 30 ))
  until [ -n "$pid" ]; do
    pid=$(walsender_pid "$slot" 2>/dev/null || true)
    [ -n "$pid" ] && break
    [ "$(date +%s)" -lt "$deadline" ] || return 0
    sleep 0.02
  done
  echo "pid $pid" >"$file"
  # No process spawned per reading but sleep: the stat line is parsed by bash itself.
  while read -r line 2>/dev/null <"/proc/$pid/stat"; do
    line=${line##*) }
    read -r -a f <<<"$line"
    echo "ticks $(( f[11] + f[12] ))" >>"$file"
    sleep 0.05
  done
}

# wr_cpu_s FILES: WaitRecords' own cpu seconds from "ready" to "done" (null if it did not finish).
wr_cpu_s() {
  awk '$1 == "ready" { r = $3 } $1 == "done" { d = $4 }
       END { if (r != "" && d != "") printf "%.2f", (d - r) / 1e9; else printf "null" }' "$1.out"
}


# threads_line FILE N: the N busiest thread names of a threads_summary file, "name(xT) cpu-s".
threads_line() {
  head -n "$2" "$1" | awk -F'\t' '{ printf "%s%s%s %s", (NR > 1 ? ", " : ""), $1, ($2 > 1 ? "(x" $2 ")" : ""), $3 }'
}

# ---------------------------------------------------------------------------------------------
# Workloads: schema and load
# ---------------------------------------------------------------------------------------------

table_of() { case "$1" in bulk|small) echo t ;; *) echo "$1" ;; esac; }

schema_sql() {
  echo "CREATE EXTENSION pg_walinspect;"
  # Autovacuum off on the bench tables: it would otherwise visit them during the measured runs.
  case "$1" in
    bulk|small) cat <<'SQL'
CREATE TABLE public.t (
  id bigint PRIMARY KEY,
  n integer NOT NULL,
  amount numeric(12,2) NOT NULL,
  label text NOT NULL,
  created_at timestamptz NOT NULL
) WITH (autovacuum_enabled = false);
SQL
      [ "$1" = bulk ] || cat <<'SQL'
-- One transaction per row without a client round trip per row: COMMIT inside a procedure.
CREATE PROCEDURE public.cmp_load_small(first bigint, last bigint) LANGUAGE plpgsql AS $$
BEGIN
  FOR g IN first..last LOOP
    INSERT INTO public.t VALUES (g, g % 1000, (g % 100000) / 100.0, md5(g::text), now());
    COMMIT;
  END LOOP;
END $$;
SQL
      ;;
    wide) cat <<'SQL'
CREATE TABLE public.wide (
  id bigint PRIMARY KEY,
  c_int2 smallint NOT NULL,
  c_int4_1 integer NOT NULL, c_int4_2 integer, c_int4_3 integer, c_int4_4 integer,
  c_int8_1 bigint NOT NULL, c_int8_2 bigint, c_int8_3 bigint,
  c_num_1 numeric(12,2) NOT NULL, c_num_2 numeric(18,4), c_num_3 numeric(8,3), c_num_var numeric,
  c_text_1 text NOT NULL, c_text_2 text, c_text_3 text, c_text_4 text, c_text_5 text,
  c_vc_1 varchar(64) NOT NULL, c_vc_2 varchar(64), c_vc_3 varchar(32), c_vc_4 varchar(255),
  c_char char(8),
  c_bool_1 boolean NOT NULL, c_bool_2 boolean, c_bool_3 boolean,
  c_date_1 date NOT NULL, c_date_2 date,
  c_ts_1 timestamp NOT NULL, c_ts_2 timestamp, c_ts_3 timestamp(3),
  c_tstz_1 timestamptz NOT NULL, c_tstz_2 timestamptz, c_tstz_3 timestamptz,
  c_uuid_1 uuid NOT NULL, c_uuid_2 uuid,
  c_jsonb_1 jsonb NOT NULL, c_jsonb_2 jsonb,
  c_f8_1 double precision NOT NULL, c_f8_2 double precision, c_f8_3 double precision,
  c_f4_1 real, c_f4_2 real,
  c_bytea_1 bytea NOT NULL, c_bytea_2 bytea,
  c_time time, c_interval interval, c_inet inet, c_tags text[],
  c_updated timestamptz
) WITH (autovacuum_enabled = false);
SQL
      ;;
    toast) cat <<'SQL'
CREATE TABLE public.toast (
  id bigint PRIMARY KEY,
  n integer NOT NULL,
  doc text NOT NULL,
  created_at timestamptz NOT NULL
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
-- Out of line and not compressed: every value is read back from the TOAST table when decoded.
ALTER TABLE public.toast ALTER COLUMN doc SET STORAGE EXTERNAL;
SQL
      ;;
  esac
  echo "CREATE PUBLICATION $PUB FOR TABLE public.$(table_of "$1");"
}

# insert_sql WORKLOAD FIRST LAST: one INSERT of rows FIRST..LAST.
insert_sql() {
  local g="generate_series($2, $3) AS g"
  case "$1" in
    bulk|small) echo "INSERT INTO public.t SELECT g, g % 1000, (g % 100000) / 100.0, md5(g::text), now() FROM $g;" ;;
    toast) echo "INSERT INTO public.toast SELECT g, g % 1000, repeat(md5(g::text), 256), now() FROM $g;" ;;
    wide) cat <<SQL
INSERT INTO public.wide SELECT g,
  (g % 30000)::smallint,
  g % 1000, (g * 7) % 100000, g % 2147483, CASE WHEN g % 2 = 0 THEN g END,
  g::bigint * 1000003, -g::bigint, g::bigint * g,
  (g % 100000) / 100.0, (g % 1000000) / 10000.0, (g % 10000) / 1000.0, g / 7.0,
  md5(g::text), md5((g + 1)::text), 'row ' || g, repeat('x', g % 50), CASE WHEN g % 3 = 0 THEN NULL ELSE md5((g * 3)::text) END,
  left(md5((g * 5)::text), 20), 'label-' || (g % 100), left(md5((g * 11)::text), 16), rpad(g::text, 40, '-'),
  lpad((g % 100000)::text, 8, '0'),
  g % 2 = 0, g % 3 = 0, CASE WHEN g % 5 = 0 THEN NULL ELSE g % 7 = 0 END,
  date '2020-01-01' + g % 3650, date '2000-01-01' + g % 10000,
  timestamp '2024-01-01' + g * interval '1 second', timestamp '2024-01-01 12:00' + g * interval '1 millisecond',
  timestamp '2024-06-01' + g * interval '1 minute',
  timestamptz '2024-01-01 00:00+00' + g * interval '1 second', now(),
  CASE WHEN g % 4 = 0 THEN NULL ELSE timestamptz '2025-01-01 00:00+00' - g * interval '1 second' END,
  md5(g::text)::uuid, md5((g + 7)::text)::uuid,
  jsonb_build_object('id', g, 'name', md5(g::text), 'active', g % 2 = 0), jsonb_build_array(g, g + 1, 'x'),
  g / 3.0, sqrt(g), g * 1.5e-3,
  (g % 1000) / 8.0, g / 1024.0,
  decode(md5(g::text), 'hex'), decode(md5((g + 2)::text) || md5((g + 3)::text), 'hex'),
  time '00:00' + (g % 86400) * interval '1 second', (g % 1000) * interval '1 minute',
  ('10.' || (g % 256) || '.' || (g / 256 % 256) || '.1')::inet, ARRAY['a' || g % 10, 'b' || g % 7],
  now()
FROM $g;
SQL
      ;;
  esac
}

# load_sql WORKLOAD: the whole load, with the markers load_end_lsn reads.
load_sql() {
  local w=$1 first=1 last i
  echo "SET synchronous_commit = on;"   # every commit durable before the next: exact end LSN
  if [ "$w" = small ]; then
    [ "$ROWS" -le 1 ] || echo "CALL public.cmp_load_small(1, $(( ROWS - 1 )));"
    echo "BEGIN;"; insert_sql small "$ROWS" "$ROWS"; echo "$XID_MARKER_SQL"; echo "COMMIT;"
  else
    for (( i = 0; i < NTX; i++ )); do
      last=$(( first + TX_ROWS - 1 )); [ "$last" -le "$ROWS" ] || last=$ROWS
      echo "BEGIN;"
      insert_sql "$w" "$first" "$last"
      [ "$i" != $(( NTX - 1 )) ] || echo "$XID_MARKER_SQL"
      echo "COMMIT;"
      first=$(( last + 1 ))
    done
  fi
  echo "$END_MARKER_SQL"
}

# ---------------------------------------------------------------------------------------------
# The Connect worker (once, before the first workload)
# ---------------------------------------------------------------------------------------------

start_connect() {
  local t0
  connect_common_config
  cat >>"$CONNECT_RUN/worker.properties" <<EOF
offset.storage.file.filename=$CONNECT_RUN/connect.offsets
# Lets a connector set producer.override.* (Connect's default policy, None, refuses them).
connector.client.config.override.policy=All
EOF
  t0=$(now)
  CONNECT_PID=$(connect_launch org.apache.kafka.connect.cli.ConnectStandalone "$CONNECT_RUN/worker.properties")
  log "connect: starting Kafka Connect standalone (pid $CONNECT_PID, ${CONNECT_HEAP[*]}), REST 127.0.0.1:$DBZ_REST_PORT, broker $KAFKA (log: $CONNECT_RUN/logs/connect.log)"
  connect_wait_rest "$CONNECT_PID"
  CONNECT_START_S=$(fsub "$(now)" "$t0")
  log "connect: REST API up ${CONNECT_START_S}s after launch"
}

# ---------------------------------------------------------------------------------------------
# The three systems
# ---------------------------------------------------------------------------------------------

# run_recvlogical DIR [SLOT [PGOUTPUT OPTION...]]: drains SLOT ($SLOT_RECV) to the end LSN;
# DIR/pg_recvlogical.json.
run_recvlogical() {
  local d=$1 slot=${2:-$SLOT_RECV} opts=() load0 h0 i0 h1 i1 st0 steal_s k0 t0 t1 rc secs user sys cpu ws_pid ws_ticks ws_cpu host_s broker_s cw0 helpers_s
  for o in "${@:3}"; do opts+=(-o "$o"); done
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  log "[$W] pg_recvlogical: draining $slot up to $END_LSN${3:+ (${*:3})}"
  walsender_sampler "$slot" "$d/recvlogical-walsender.txt" &
  SAMPLER_PID=$!
  proc_snapshot >"$d/recvlogical-procs.before"
  read -r h0 i0 < <(host_cpu); st0=$(steal_ticks); k0=$(broker_ticks); cw0=$(connect_ticks)
  t0=$(now)
  timeout "$RUN_TIMEOUT" /usr/bin/time -v -o "$d/recvlogical.time" \
    pg_recvlogical -d "$CONN_BASE dbname=$DB application_name=cmp_recvlogical" \
      --slot="$slot" --start --endpos="$END_LSN" --no-loop \
      -o proto_version=1 -o publication_names="$PUB" ${opts[@]+"${opts[@]}"} -f /dev/null 2>"$d/recvlogical.log" &
  RECV_PID=$!
  rc=0; wait "$RECV_PID" || rc=$?
  t1=$(now)
  read -r h1 i1 < <(host_cpu); steal_s=$(ticks_to_s $(( $(steal_ticks) - st0 ))); broker_s=$(broker_cpu_s "$k0"); helpers_s=$(ticks_to_s $(( $(connect_ticks) - cw0 )))
  proc_snapshot >"$d/recvlogical-procs.after"
  RECV_PID=""
  [ "$rc" = 0 ] || { cat "$d/recvlogical.log" >&2; die "pg_recvlogical failed (exit $rc; 124 = timeout of ${RUN_TIMEOUT}s)"; }
  # The walsender exits with its client; the sampler ends with it.
  local deadline=$(( $(date +%s) + 10 ))
  while kill -0 "$SAMPLER_PID" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.05; done
  stop_bg "$SAMPLER_PID" 2 sampler; SAMPLER_PID=""
  ws_pid=$(awk '$1 == "pid" { print $2 }' "$d/recvlogical-walsender.txt" 2>/dev/null || true)
  ws_ticks=$(awk '$1 == "ticks" { t = $2 } END { print t }' "$d/recvlogical-walsender.txt" 2>/dev/null || true)
  ws_cpu=null; [ -z "$ws_ticks" ] || ws_cpu=$(ticks_to_s "$ws_ticks")
  # pg_recvlogical's own pid is its wrapper's child: left out by name.
  grep -v -P '\tpg_recvlogical$' "$d/recvlogical-procs.after" >"$d/recvlogical-procs.after-others" || true
  secs=$(fsub "$t1" "$t0")
  user=$(time_field "$d/recvlogical.time" "User time (seconds)")
  sys=$(time_field "$d/recvlogical.time" "System time (seconds)")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  host_s=$(host_busy_s "$h0" "$i0" "$h1" "$i1")
  log "[$W] pg_recvlogical: ${secs}s, $(fdiv "$ROWS" "$secs") rows/s"
  mkjson seconds "$secs" events_per_s "$(fdiv "$ROWS" "$secs")" \
    cpu_s "$cpu" cpu_user_s "$user" cpu_sys_s "$sys" cpu_s_per_million "$(per_million "$cpu" "$ROWS")" \
    peak_rss_mib "$(kib_to_mib "$(time_field "$d/recvlogical.time" "Maximum resident set size (kbytes)")")" \
    walsender_pid "${ws_pid:-null}" walsender_cpu_s "$ws_cpu" walsender_cpu_s_per_million "$(per_million "$ws_cpu" "$ROWS")" \
    broker_cpu_s "$broker_s" host_busy_cpu_s "$host_s" bench_helpers_cpu_s "$helpers_s" host_steal_cpu_s "$steal_s" \
    other_processes_cpu_s "$(other_cpu_s "$host_s" "$cpu" "$ws_cpu" "$broker_s" "$helpers_s" "$steal_s")" \
    other_processes_top "$(other_top "$d/recvlogical-procs.before" "$d/recvlogical-procs.after-others" "${ws_pid:-0}" "${KAFKA_PID:-0}" "${CONNECT_PID:-0}")" \
    loadavg_at_start "$load0" exit_code "$rc" records "$ROWS" verified true \
    note "timed from launch to exit (--endpos); walsender cpu sampled every 50 ms until it exits" >"$d/pg_recvlogical.json"
}

# run_pgcdc DIR [SLOT PREFIX [KEY=VALUE...]]: pgcdc from SLOT ($SLOT_PGCDC) to the topic of
# PREFIX ($PREFIX_PGCDC), with the extra settings; DIR/pgcdc.json.
run_pgcdc() {
  local d=$1 slot=${2:-$SLOT_PGCDC} prefix=${3:-$PREFIX_PGCDC} topic load0 h0 i0 h1 i1 st0 steal_s k0 t0 t_ack secs cpu vmhwm ws_pid ws_cpu host_s broker_s rc wr_rc
  local t_first t_done ts t_stream startup records kv deadline set_args=() extra=() cw0 helpers_s pgcdc_pid wr_pid
  topic="$prefix.public.$TABLE"
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  # The connector config: no producer settings (pgcdc's defaults), the bench's publication.
  jq -n \
    --arg host "$PG_HOST" --arg port "$PG_PORT" --arg user "$PG_USER" --arg pw "$PGPASSWORD" \
    --arg db "$DB" --arg ssl "$SSLMODE" --arg slot "$slot" --arg pub "$PUB" \
    --arg table "public.$TABLE" --arg prefix "$prefix" --arg status "$STATUS_MS" \
    --arg offsets "$d/pgcdc-offsets.json" --arg kafka "$KAFKA" '
    {name: "pgcdc-compare", config: {
      "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
      "database.hostname": $host, "database.port": $port, "database.user": $user,
      "database.password": $pw, "database.dbname": $db, "database.sslmode": $ssl,
      "plugin.name": "pgoutput", "slot.name": $slot, "publication.name": $pub,
      "publication.autocreate.mode": "disabled", "table.include.list": $table,
      "topic.prefix": $prefix, "snapshot.mode": "no_data",
      "status.update.interval.ms": $status,
      "offset.storage.file.filename": $offsets,
      "bootstrap.servers": $kafka
    }}' >"$d/pgcdc-connector.json"
  chmod 600 "$d/pgcdc-connector.json"   # holds the (local test) database password
  read -r -a extra <<<"$EXTRA_SET ${*:4}"
  for kv in ${extra[@]+"${extra[@]}"}; do
    [[ "$kv" == *=* ]] || die "BENCH_SET: '$kv' is not key=value"
    set_args+=(--set "$kv")
  done

  start_slot_waiter "$DB" "$slot" "$END_LSN" "$RUN_TIMEOUT" cmp_waiter "$d/pgcdc-waiter"
  start_record_waiter "$topic" "$d/pgcdc-records"
  TOPICS_MAY_EXIST=1
  proc_snapshot >"$d/pgcdc-procs.before"
  read -r h0 i0 < <(host_cpu); st0=$(steal_ticks); k0=$(broker_ticks); cw0=$(connect_ticks)
  log "[$W] pgcdc: starting on $slot, topic $topic (log: $d/pgcdc.log)"
  t0=$(now)
  start_pgcdc "$d" "$d/pgcdc-connector.json" ${set_args[@]+"${set_args[@]}"}
  pgcdc_pid=${PGCDC_PID:-0}; wr_pid=$WR_PID

  # Whichever comes first: the slot reaching the end LSN, or pgcdc exiting.
  wait -n -p FIRST "$WAITER_PID" "$TIME_PID" || true
  if [ "${FIRST:-}" != "$WAITER_PID" ] || ! grep -qE '^[0-9]+\.[0-9]+$' "$d/pgcdc-waiter.out"; then
    tail -n 40 "$d/pgcdc.log" >&2 || true
    cat "$d/pgcdc-waiter.err" >&2 || true
    [ "${FIRST:-}" != "$TIME_PID" ] || die "[$W] pgcdc exited before Kafka acknowledged everything (log: $d/pgcdc.log)"
    die "[$W] waiting for $slot to reach $END_LSN failed (see above)"
  fi
  WAITER_PID=""
  t_ack=$(tail -n 1 "$d/pgcdc-waiter.out")
  # Measurements at the last ack, before stopping anything.
  vmhwm=$(vm_field "$PGCDC_PID" VmHWM)
  cpu=$(ticks_to_s "$(cpu_ticks "$PGCDC_PID")")
  read -r h1 i1 < <(host_cpu); steal_s=$(ticks_to_s $(( $(steal_ticks) - st0 ))); broker_s=$(broker_cpu_s "$k0"); helpers_s=$(ticks_to_s $(( $(connect_ticks) - cw0 )))
  ws_pid=$(walsender_pid "$slot"); ws_cpu=null
  [ -z "$ws_pid" ] || ws_cpu=$(ticks_to_s "$(cpu_ticks "$ws_pid")")
  threads_summary <(thread_stats "$PGCDC_PID") >"$d/pgcdc-threads.tsv"
  proc_snapshot >"$d/pgcdc-procs.after"
  secs=$(fsub "$t_ack" "$t0")
  host_s=$(host_busy_s "$h0" "$i0" "$h1" "$i1")
  log "[$W] pgcdc: last record acknowledged after ${secs}s, $(fdiv "$ROWS" "$secs") events/s"

  # The topic saw every record (WaitRecords, polling since before the start).
  deadline=$(( $(date +%s) + 60 ))
  while kill -0 "$WR_PID" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.05; done
  wr_rc=0; wait "$WR_PID" || wr_rc=$?
  WR_PID=""
  t_first=$(wr_time "$d/pgcdc-records" first); t_done=$(wr_time "$d/pgcdc-records" "done")
  helpers_s=$(awk -v a="$helpers_s" -v b="$(wr_cpu_s "$d/pgcdc-records")" 'BEGIN { printf "%.2f", a + (b == "null" ? 0 : b) }')

  log "[$W] pgcdc: SIGTERM"
  stop_pgcdc
  rc=$PGCDC_RC
  records=$(watermark_records "$topic")
  [ "$wr_rc" = 0 ] || die "[$W] pgcdc: WaitRecords exit $wr_rc ($(tail -n 3 "$d/pgcdc-records.err" 2>/dev/null)); topic holds $records records, expected $ROWS"
  [ "$records" = "$ROWS" ] || die "[$W] pgcdc: topic $topic holds $records records, expected $ROWS"
  [ "$rc" = 0 ] || die "[$W] pgcdc exited with $rc after SIGTERM (log: $d/pgcdc.log)"

  startup=null
  ts=$(strip_ansi "$d/pgcdc.log" | awk '/streaming started/ && !seen { print $1; seen = 1 }')
  if [ -n "$ts" ] && t_stream=$(date -d "$ts" +%s.%N 2>/dev/null); then startup=$(fsub "$t_stream" "$t0"); fi
  mkjson seconds "$secs" events_per_s "$(fdiv "$ROWS" "$secs")" \
    cpu_s "$cpu" cpu_s_per_million "$(per_million "$cpu" "$ROWS")" \
    cpu_user_s_total "$(time_field "$d/pgcdc.time" "User time (seconds)")" \
    cpu_sys_s_total "$(time_field "$d/pgcdc.time" "System time (seconds)")" \
    peak_rss_mib "$(kib_to_mib "$(time_field "$d/pgcdc.time" "Maximum resident set size (kbytes)")")" \
    vmhwm_at_last_ack_mib "$vmhwm" \
    walsender_pid "${ws_pid:-null}" walsender_cpu_s "$ws_cpu" walsender_cpu_s_per_million "$(per_million "$ws_cpu" "$ROWS")" \
    broker_cpu_s "$broker_s" host_busy_cpu_s "$host_s" bench_helpers_cpu_s "$helpers_s" host_steal_cpu_s "$steal_s" \
    other_processes_cpu_s "$(other_cpu_s "$host_s" "$cpu" "$ws_cpu" "$broker_s" "$helpers_s" "$steal_s")" \
    other_processes_top "$(other_top "$d/pgcdc-procs.before" "$d/pgcdc-procs.after" "$pgcdc_pid" "${ws_pid:-0}" "${KAFKA_PID:-0}" "${CONNECT_PID:-0}" "$wr_pid")" \
    loadavg_at_start "$load0" startup_s "$startup" \
    first_record_s "$(since "$t_first" "$t0")" all_records_in_topic_s "$(since "$t_done" "$t0")" \
    events_per_s_all_in_topic "$( [ -z "$t_done" ] || fdiv "$ROWS" "$(fsub "$t_done" "$t0")")" \
    exit_code "$rc" records "$records" verified true topic "$topic" \
    log_warnings "$(strip_ansi "$d/pgcdc.log" | grep -c ' WARN ' || true)" \
    log_errors "$(strip_ansi "$d/pgcdc.log" | grep -cE ' ERROR |pgcdc: error' || true)" \
    reader_queue_bytes_max "$(stopped_field "$d/pgcdc.log" reader_queue_bytes_max)" \
    producer_queue_bytes_max "$(stopped_field "$d/pgcdc.log" producer_queue_bytes_max)" \
    note "timed from process start until the slot confirms the end LSN (every record acknowledged)" \
    | jq --argjson threads "$(threads_json "$d/pgcdc-threads.tsv")" '. + {threads_cpu: $threads}' >"$d/pgcdc.json"
}

# The value of FIELD in pgcdc's last "stopped" log line (its buffers' high-water marks), or null
# (also for a build that does not log it: BENCH_PGCDC_BIN may be an older one).
stopped_field() {
  local v
  v=$(strip_ansi "$1" | grep ' stopped' | grep -o "$2=[0-9]*" | tail -n 1 | cut -d= -f2 || true)
  echo "${v:-null}"
}

run_debezium() {
  local d=$1 name="cmp-dbz-$W" load0 h0 i0 h1 i1 st0 steal_s k0 c0 c1 t0 t_done t_first secs cpu hwm rss
  local ws_pid ws_cpu host_s broker_s wr_rc records deadline log0 hwm_reset=true kv extra=() extra_json helpers_s wr_pid
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  read -r -a extra <<<"$DBZ_EXTRA_SET"
  for kv in ${extra[@]+"${extra[@]}"}; do [[ "$kv" == *=* ]] || die "BENCH_DBZ_SET: '$kv' is not key=value"; done
  extra_json=$(printf '%s\n' ${extra[@]+"${extra[@]}"} | jq -R -s 'split("\n") | map(select(length > 0) | capture("^(?<k>[^=]+)=(?<v>.*)$") | {(.k): .v}) | add // {}')
  jq -n \
    --arg name "$name" --arg host "$PG_HOST" --arg port "$PG_PORT" --arg user "$PG_USER" \
    --arg pw "$PGPASSWORD" --arg db "$DB" --arg ssl "$SSLMODE" --arg slot "$SLOT_DBZ" \
    --arg pub "$PUB" --arg table "public.$TABLE" --arg prefix "$PREFIX_DBZ" --argjson extra "$extra_json" \
    --argjson dbz "$DBZ_TUNING_JSON" '
    {name: $name, config: ({
      "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
      "tasks.max": "1",
      "database.hostname": $host, "database.port": $port, "database.user": $user,
      "database.password": $pw, "database.dbname": $db, "database.sslmode": $ssl,
      "plugin.name": "pgoutput", "slot.name": $slot, "publication.name": $pub,
      "publication.autocreate.mode": "disabled", "table.include.list": $table,
      "topic.prefix": $prefix, "snapshot.mode": "no_data"
    } + $dbz + $extra)}' >"$d/debezium-connector.json"
  chmod 600 "$d/debezium-connector.json"

  kill -0 "$CONNECT_PID" 2>/dev/null || die "the Connect worker (pid $CONNECT_PID) is gone (log: $CONNECT_RUN/logs/connect.log)"
  start_record_waiter "$TOPIC_DBZ" "$d/debezium-records"
  TOPICS_MAY_EXIST=1
  # Peak RSS of this run: reset the worker's VmHWM to its current RSS (Linux clear_refs 5).
  echo 5 2>/dev/null >"/proc/$CONNECT_PID/clear_refs" || hwm_reset=false
  log0=$(wc -l <"$CONNECT_RUN/logs/connect.log" 2>/dev/null || echo 0)
  thread_stats "$CONNECT_PID" >"$d/debezium-threads.before"
  proc_snapshot >"$d/debezium-procs.before"; wr_pid=$WR_PID
  read -r h0 i0 < <(host_cpu); st0=$(steal_ticks); k0=$(broker_ticks); c0=$(cpu_ticks "$CONNECT_PID")
  log "[$W] debezium: POST /connectors $name on $SLOT_DBZ, topic $TOPIC_DBZ"
  t0=$(now)
  connect_create "$d/debezium-connector.json"
  dbz_watchdog "$name" >"$d/debezium-watchdog.out" 2>&1 &
  WATCHDOG_PID=$!
  wr_rc=0; wait -n -p FIRST "$WR_PID" "$WATCHDOG_PID" || wr_rc=$?
  if [ "${FIRST:-}" != "$WR_PID" ]; then
    cat "$d/debezium-watchdog.out" >&2
    die "[$W] debezium failed before its topic held $ROWS records (log: $CONNECT_RUN/logs/connect.log)"
  fi
  WR_PID=""
  # Measurements at completion, before stopping anything.
  c1=$(cpu_ticks "$CONNECT_PID"); hwm=$(vm_field "$CONNECT_PID" VmHWM); rss=$(vm_field "$CONNECT_PID" VmRSS)
  read -r h1 i1 < <(host_cpu); steal_s=$(ticks_to_s $(( $(steal_ticks) - st0 ))); broker_s=$(broker_cpu_s "$k0")
  ws_pid=$(walsender_pid "$SLOT_DBZ"); ws_cpu=null
  [ -z "$ws_pid" ] || ws_cpu=$(ticks_to_s "$(cpu_ticks "$ws_pid")")
  threads_summary <(thread_stats "$CONNECT_PID") "$d/debezium-threads.before" >"$d/debezium-threads.tsv"
  proc_snapshot >"$d/debezium-procs.after"
  stop_bg "$WATCHDOG_PID" 5 watchdog; WATCHDOG_PID=""
  if [ "$wr_rc" != 0 ]; then
    cat "$d/debezium-records.err" >&2 || true
    [ "$wr_rc" != 3 ] || die "[$W] debezium: more records than rows in $TOPIC_DBZ ($(tail -n 1 "$d/debezium-records.out"))"
    die "[$W] debezium: $TOPIC_DBZ did not reach $ROWS records within ${RUN_TIMEOUT}s (log: $CONNECT_RUN/logs/connect.log)"
  fi
  t_done=$(wr_time "$d/debezium-records" "done"); t_first=$(wr_time "$d/debezium-records" first)
  secs=$(fsub "$t_done" "$t0")
  cpu=$(ticks_to_s $(( c1 - c0 )))
  host_s=$(host_busy_s "$h0" "$i0" "$h1" "$i1")
  helpers_s=$(wr_cpu_s "$d/debezium-records")
  log "[$W] debezium: every record in the topic after ${secs}s, $(fdiv "$ROWS" "$secs") events/s"

  # Delete the connector: it stops streaming and releases its slot.
  curl -sS --max-time 60 -o /dev/null -X DELETE "http://127.0.0.1:$DBZ_REST_PORT/connectors/$name" \
    || die "connect: DELETE /connectors/$name failed"
  deadline=$(( $(date +%s) + 60 ))
  while [ -n "$(walsender_pid "$SLOT_DBZ")" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "[$W] slot $SLOT_DBZ still active 60s after the connector was deleted"
    sleep 0.1
  done
  records=$(watermark_records "$TOPIC_DBZ")
  [ "$records" = "$ROWS" ] || die "[$W] debezium: topic $TOPIC_DBZ holds $records records, expected $ROWS"
  sed -n "$(( log0 + 1 )),\$p" "$CONNECT_RUN/logs/connect.log" >"$d/connect.log" 2>/dev/null || true

  mkjson seconds "$secs" events_per_s "$(fdiv "$ROWS" "$secs")" \
    cpu_s "$cpu" cpu_s_per_million "$(per_million "$cpu" "$ROWS")" \
    vmhwm_mib "$hwm" vmhwm_reset_before_run "$hwm_reset" rss_at_completion_mib "$rss" \
    walsender_pid "${ws_pid:-null}" walsender_cpu_s "$ws_cpu" walsender_cpu_s_per_million "$(per_million "$ws_cpu" "$ROWS")" \
    broker_cpu_s "$broker_s" host_busy_cpu_s "$host_s" bench_helpers_cpu_s "$helpers_s" host_steal_cpu_s "$steal_s" \
    other_processes_cpu_s "$(other_cpu_s "$host_s" "$cpu" "$ws_cpu" "$broker_s" "$helpers_s" "$steal_s")" \
    other_processes_top "$(other_top "$d/debezium-procs.before" "$d/debezium-procs.after" "$CONNECT_PID" "${ws_pid:-0}" "${KAFKA_PID:-0}" "$wr_pid")" \
    loadavg_at_start "$load0" \
    first_record_s "$(since "$t_first" "$t0")" \
    records "$records" verified true topic "$TOPIC_DBZ" connector "$name" \
    log_warnings "$(grep -c '\] WARN ' "$d/connect.log" || true)" \
    log_errors "$(grep -c '\] ERROR ' "$d/connect.log" || true)" \
    note "timed from POST /connectors until the topic's watermarks sum to the row count; cpu = the Connect JVM's growth over that interval" \
    | jq --argjson threads "$(threads_json "$d/debezium-threads.tsv")" '. + {threads_cpu: $threads}' >"$d/debezium.json"
}

# ---------------------------------------------------------------------------------------------
# One workload
# ---------------------------------------------------------------------------------------------

run_workload() {
  W=$1
  local rep=${2:-1} label=$1 tag=""
  # Repeats get their own directory, label and topic prefixes (a letter: a deleted topic's name
  # is not reused at once).
  if [ "$REPEAT" -gt 1 ]; then label="$W#$rep"; tag=$(printf "\\$(printf '%03o' $(( 96 + rep )))"); fi
  local d="$RUN/$W${tag:+-$rep}" sizes idx=0 lsn_recv lsn_pgcdc lsn_dbz equal t_load0 load_s wal_bytes count toast_bytes
  mkdir -p "$d"
  case "$MODE" in default) idx=0 ;; quick) idx=2 ;; smoke) idx=4 ;; esac
  read -r -a sizes <<<"${SIZES[$W]}"
  local up=${W^^} rows_var tx_var
  rows_var="BENCH_${up}_ROWS"; tx_var="BENCH_${up}_TX_ROWS"
  ROWS=${!rows_var:-${sizes[$idx]}}
  TX_ROWS=${!tx_var:-${sizes[$(( idx + 1 ))]}}
  { is_uint "$ROWS" && [ "$ROWS" -gt 0 ]; } || die "BENCH_${up}_ROWS=$ROWS: expected a positive integer"
  { is_uint "$TX_ROWS" && [ "$TX_ROWS" -gt 0 ]; } || die "BENCH_${up}_TX_ROWS=$TX_ROWS: expected a positive integer"
  [ "$W" != small ] || TX_ROWS=1
  NTX=$(( (ROWS + TX_ROWS - 1) / TX_ROWS ))
  TABLE=$(table_of "$W")
  PREFIX_PGCDC="cmp$STAMP${W}${tag}pgcdc"     # letters and digits: a valid topic.prefix
  PREFIX_DBZ="cmp$STAMP${W}${tag}dbz"
  TOPIC_PGCDC="$PREFIX_PGCDC.public.$TABLE"
  TOPIC_DBZ="$PREFIX_DBZ.public.$TABLE"
  PREFIX_PGCDC_BIN="cmp$STAMP${W}${tag}pgcdcbin"

  log "=== [$label] $ROWS rows in $NTX transactions of up to $TX_ROWS ==="
  OBJECTS_MAY_EXIST=1
  drop_bench_objects "$DB" "$PUB" "${SLOTS[@]}"   # leftovers of an interrupted run
  q postgres -c "CREATE DATABASE $DB"
  schema_sql "$W" >"$d/schema.sql"
  q "$DB" -f "$d/schema.sql" >/dev/null
  q "$DB" -c "SELECT pg_create_logical_replication_slot('$SLOT_RECV', 'pgoutput')" >/dev/null
  q "$DB" -c "SELECT pg_copy_logical_replication_slot('$SLOT_RECV', '$SLOT_PGCDC')" >/dev/null
  q "$DB" -c "SELECT pg_copy_logical_replication_slot('$SLOT_RECV', '$SLOT_DBZ')" >/dev/null
  if [ "$BINARY" = 1 ]; then
    q "$DB" -c "SELECT pg_copy_logical_replication_slot('$SLOT_RECV', '$SLOT_RECV_BIN')" >/dev/null
    q "$DB" -c "SELECT pg_copy_logical_replication_slot('$SLOT_RECV', '$SLOT_PGCDC_BIN')" >/dev/null
  fi
  slot_lsn() { q "$DB" -c "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$1'"; }
  lsn_recv=$(slot_lsn "$SLOT_RECV"); lsn_pgcdc=$(slot_lsn "$SLOT_PGCDC"); lsn_dbz=$(slot_lsn "$SLOT_DBZ")
  equal=false; [ "$lsn_recv" != "$lsn_pgcdc" ] || [ "$lsn_recv" != "$lsn_dbz" ] || equal=true
  [ "$equal" = true ] || die "[$W] the slots start at different LSNs: $lsn_recv $lsn_pgcdc $lsn_dbz"
  log "[$W] slots $SLOT_RECV, $SLOT_PGCDC, $SLOT_DBZ start at $lsn_recv"

  load_sql "$W" >"$d/load.sql"
  log "[$W] loading (nothing consumes the slots meanwhile)"
  t_load0=$(now)
  timeout "$RUN_TIMEOUT" psql -X -q -At -v ON_ERROR_STOP=1 "$CONN_BASE dbname=$DB application_name=cmp_load" \
      -f "$d/load.sql" >"$d/load.out" 2>"$d/load.err" \
    || { tail -n 20 "$d/load.err" >&2; die "[$W] load failed or took more than ${RUN_TIMEOUT}s (BENCH_TIMEOUT)"; }
  load_s=$(fsub "$(now)" "$t_load0")
  load_end_lsn "$DB" "$d/load.out"
  wal_bytes=$(q "$DB" -c "SELECT pg_wal_lsn_diff('$END_LSN', '$lsn_recv')::bigint")
  count=$(q "$DB" -c "SELECT count(*) FROM public.$TABLE")
  [ "$count" = "$ROWS" ] || die "[$W] table holds $count rows, expected $ROWS"
  toast_bytes=$(q "$DB" -c "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'public.$TABLE'::regclass AND reltoastrelid <> 0")
  if [ "$W" = toast ] && [ "${toast_bytes:-0}" -lt $(( ROWS * 8192 )) ]; then
    die "[$W] the TOAST table holds ${toast_bytes:-0} bytes: the values were not stored out of line"
  fi
  # The load's dirty pages are written now rather than during a measured run.
  q "$DB" -c "CHECKPOINT"
  log "[$W] loaded in ${load_s}s; last commit (xid $LAST_XID) ends at $END_LSN; $wal_bytes WAL bytes"

  run_recvlogical "$d"
  run_pgcdc "$d"
  if [ "$BINARY" = 1 ]; then
    mkdir -p "$d/binary"
    run_recvlogical "$d/binary" "$SLOT_RECV_BIN" binary=true
    run_pgcdc "$d/binary" "$SLOT_PGCDC_BIN" "$PREFIX_PGCDC_BIN" pgcdc.pgoutput.binary=true
  else
    echo null >"$d/no-binary.json"
  fi
  run_debezium "$d"

  jq -n --arg name "$W" --arg lbl "$label" --argjson rep "$rep" --argjson rows "$ROWS" --argjson tx "$TX_ROWS" --argjson ntx "$NTX" \
    --arg table "public.$TABLE" --argjson load_s "$load_s" --argjson wal "$wal_bytes" \
    --argjson toast "${toast_bytes:-0}" --arg lsn "$lsn_recv" --arg end_lsn "$END_LSN" \
    --arg end_wal "$END_WAL_LSN" --arg dir "$d" \
    --slurpfile r "$d/pg_recvlogical.json" --slurpfile p "$d/pgcdc.json" --slurpfile z "$d/debezium.json" \
    --slurpfile rb "$( [ "$BINARY" = 1 ] && echo "$d/binary/pg_recvlogical.json" || echo "$d/no-binary.json")" \
    --slurpfile pb "$( [ "$BINARY" = 1 ] && echo "$d/binary/pgcdc.json" || echo "$d/no-binary.json")" '
    def ratio($a; $b): if ($a != null and $b != null and $b > 0) then ($a / $b * 1000 | round / 1000) else null end;
    {name: $name, "label": $lbl, "repeat": $rep, rows: $rows, rows_per_transaction: $tx, transactions: $ntx, table: $table,
     load_seconds: $load_s, wal_bytes: $wal, toast_table_bytes: $toast, run_dir: $dir,
     lsn: {slots_start: $lsn, slots_equal: true, last_commit_end: $end_lsn, pg_current_wal_lsn_after_load: $end_wal},
     pg_recvlogical: $r[0], pgcdc: $p[0], debezium: $z[0],
     ratios: {
       pgcdc_to_ceiling_events_per_s: ratio($p[0].events_per_s; $r[0].events_per_s),
       pgcdc_to_debezium_events_per_s: ratio($p[0].events_per_s; $z[0].events_per_s),
       pgcdc_to_debezium_events_per_s_both_to_all_in_topic: ratio($p[0].events_per_s_all_in_topic; $z[0].events_per_s),
       pgcdc_to_debezium_cpu_per_event: ratio($p[0].cpu_s; $z[0].cpu_s),
       pgcdc_to_its_walsender_cpu_per_event: ratio($p[0].cpu_s; $p[0].walsender_cpu_s),
       debezium_to_its_walsender_cpu_per_event: ratio($z[0].cpu_s; $z[0].walsender_cpu_s)},
     binary_tuples: (if $rb[0] == null then null else
       {pg_recvlogical: $rb[0], pgcdc: $pb[0],
        ratios: {recvlogical_walsender_cpu_binary_to_text: ratio($rb[0].walsender_cpu_s; $r[0].walsender_cpu_s),
                 recvlogical_events_per_s_binary_to_text: ratio($rb[0].events_per_s; $r[0].events_per_s),
                 pgcdc_walsender_cpu_binary_to_text: ratio($pb[0].walsender_cpu_s; $p[0].walsender_cpu_s),
                 pgcdc_cpu_binary_to_text: ratio($pb[0].cpu_s; $p[0].cpu_s),
                 pgcdc_events_per_s_binary_to_text: ratio($pb[0].events_per_s; $p[0].events_per_s),
                 pgcdc_binary_to_its_walsender_cpu_per_event: ratio($pb[0].cpu_s; $pb[0].walsender_cpu_s)}} end)}' >"$d/workload.json"

  LABELS+=("$label"); WORKLOAD_DIRS+=("$d")
  # Free the disk before the next workload: the topics of a million rows take GBs.
  drop_bench_objects "$DB" "$PUB" "${SLOTS[@]}"
  OBJECTS_MAY_EXIST=0
  delete_topics "cmp$STAMP$W$tag(pgcdc|pgcdcbin|dbz)\\..*"
}

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

# The Debezium tuning a Debezium user would apply for throughput (see bench/README.md).
DBZ_TUNING_JSON='{"max.batch.size": "8192", "max.queue.size": "32768",
  "producer.override.linger.ms": "5", "producer.override.batch.size": "1000000"}'

T_START=$(now)
if host_was_busy "$LOADAVG_START"; then
  log "WARNING: load average was $LOADAVG_START at start on $(nproc) cpus: other work competes for the cpus, figures are pessimistic"
fi
start_connect
LABELS=() WORKLOAD_DIRS=()   # filled by run_workload
for rep in $(seq 1 "$REPEAT"); do
  for w in "${WORKLOADS[@]}"; do run_workload "$w" "$rep"; done
done
log "stopping the Connect worker"
connect_stop
CONNECT_PID=""
TOTAL_S=$(fsub "$(now)" "$T_START")

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

GIT_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
GIT_DIRTY=$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null | wc -l | tr -d ' ')
# Another build (BENCH_PGCDC_BIN) is not this checkout's: its commit is what
# BENCH_PGCDC_COMMIT says, if anything.
if [ "$PGCDC" != "$ROOT/target/release/pgcdc" ] && [ "$PGCDC" != "$ROOT/target/debug/pgcdc" ]; then
  GIT_COMMIT=${BENCH_PGCDC_COMMIT:-unknown (BENCH_PGCDC_BIN)}
fi
BIN_MTIME=$(date -u -r "$PGCDC" +%Y-%m-%dT%H:%M:%SZ)
LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg)
JAVA_VERSION=$(java -version 2>&1 | head -n 1)
CONNECT_VERSION=$(find "$CONNECT_LIB" -name 'connect-runtime-*.jar' -printf '%f\n' | sed -n 's/^connect-runtime-\(.*\)\.jar$/\1/p' | head -n 1)
BUSY=false; ! host_was_busy "$LOADAVG_START" || BUSY=true
jq -n --arg date "$STAMP" --arg mode "$MODE" --arg run_dir "$RUN" --argjson total_s "$TOTAL_S" \
  --arg commit "$GIT_COMMIT" --argjson dirty "$GIT_DIRTY" --arg bin "$PGCDC" --arg bin_mtime "$BIN_MTIME" \
  --argjson cpus "$(nproc)" --arg load0 "$LOADAVG_START" --arg load1 "$LOADAVG_END" --argjson busy "$BUSY" \
  --arg dbz_version "$DBZ_VERSION" --arg connect_version "$CONNECT_VERSION" --arg java "$JAVA_VERSION" \
  --arg heap "${CONNECT_HEAP[*]}" --argjson connect_start "$CONNECT_START_S" --argjson tuning "$DBZ_TUNING_JSON" \
  --arg dbz_extra "$DBZ_EXTRA_SET" --arg pgcdc_extra "$EXTRA_SET" --arg kafka "$KAFKA" --arg ssl "$SSLMODE" \
  --argjson status "$STATUS_MS" --argjson flush "$DBZ_OFFSET_FLUSH_MS" \
  --slurpfile ws <(for d in "${WORKLOAD_DIRS[@]}"; do cat "$d/workload.json"; done) '
{
  bench: "compare", date: $date, mode: $mode, run_dir: $run_dir, total_seconds: $total_s,
  host: {cpus: $cpus, loadavg_at_start: $load0, loadavg_at_end: $load1, busy_at_start: $busy},
  kafka: {bootstrap: $kafka, partitions_per_topic: "broker default (1)", converter: "JsonConverter, schemas.enable=true (key and value)"},
  pgcdc: {binary: $bin, git_commit: $commit, uncommitted_source_files: $dirty, binary_mtime: $bin_mtime,
          settings: {producer: "pgcdc defaults (linger.ms=5, batch.size=1000000, acks=all, enable.idempotence=true)",
                     "snapshot.mode": "no_data", "status.update.interval.ms": $status,
                     "publication.autocreate.mode": "disabled", "database.sslmode": $ssl, extra_set: $pgcdc_extra}},
  debezium: {connector: ("debezium-connector-postgres " + $dbz_version), kafka_connect: $connect_version,
             worker: {mode: "standalone", rest_port: 58183, jvm: $java, heap: $heap, start_seconds: $connect_start,
                      "offset.flush.interval.ms": $flush, "connector.client.config.override.policy": "All",
                      producer_set_by_connect: {acks: "all", "max.in.flight.requests.per.connection": "1",
                                                "enable.idempotence": "false", "delivery.timeout.ms": "2147483647"}},
             connector_settings: ($tuning + {"snapshot.mode": "no_data", "plugin.name": "pgoutput",
                                  "publication.autocreate.mode": "disabled", "database.sslmode": $ssl}),
             extra_set: $dbz_extra},
  workloads: $ws,
  repeats: ($ws | group_by(.name) | map(
    def stats: map(select(. != null)) | sort as $s | ($s | length) as $n
      | if $n == 0 then null else {min: $s[0], max: $s[-1], runs: $n,
          median: (if $n % 2 == 1 then $s[($n - 1) / 2] else (($s[$n / 2 - 1] + $s[$n / 2]) / 2 * 1000 | round / 1000) end)} end;
    . as $runs
    | {name: .[0].name, runs: length,
       events_per_s: ({pg_recvlogical: ($runs | map(.pg_recvlogical.events_per_s) | stats),
                       pgcdc: ($runs | map(.pgcdc.events_per_s) | stats),
                       debezium: ($runs | map(.debezium.events_per_s) | stats)}),
       pgcdc_peak_rss_mib: ($runs | map(.pgcdc.peak_rss_mib) | stats),
       broker_cpu_s: ({pgcdc: ($runs | map(.pgcdc.broker_cpu_s) | stats),
                       debezium: ($runs | map(.debezium.broker_cpu_s) | stats)}),
       ratios: (reduce (.[0].ratios | keys[]) as $k ({}; . + {($k): ($runs | map(.ratios[$k]) | stats)}))}))
}' >"$JSON"

# The readable report, from the JSON.
fmt_rows() { # workload label -> the three system rows of its table
  jq -r --arg w "$1" '.workloads[] | select(.label == $w) as $x
    | ["pg_recvlogical", "pgcdc", "debezium"][] as $s | $x[$s] as $r
    | [$s, $r.seconds, $r.events_per_s, $r.cpu_s, $r.cpu_s_per_million, $r.walsender_cpu_s_per_million,
       $r.broker_cpu_s, $r.other_processes_cpu_s,
       (if $s == "pgcdc" then "\($r.peak_rss_mib) (VmHWM \($r.vmhwm_at_last_ack_mib))"
        elif $s == "debezium" then "\($r.vmhwm_mib) (at end \($r.rss_at_completion_mib))"
        else "\($r.peak_rss_mib)" end)] | map(tostring) | @tsv' "$JSON" \
  | awk -F'\t' '{ printf "  %-15s %8s %10s %8s %9s %12s %9s %8s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
}
{
  echo
  echo "=== pgcdc, Debezium and pg_recvlogical on the same backlog ($STAMP, $MODE sizes) ==="
  echo "pgcdc       $PGCDC: build $GIT_COMMIT (+$GIT_DIRTY uncommitted source files), binary $BIN_MTIME"
  echo "            default producer settings (linger.ms=5, batch.size=1000000, acks=all, idempotent); snapshot.mode=no_data, status.update.interval.ms=$STATUS_MS${EXTRA_SET:+; BENCH_SET: $EXTRA_SET}"
  echo "debezium    debezium-connector-postgres $DBZ_VERSION on Kafka Connect $CONNECT_VERSION standalone, JVM ${CONNECT_HEAP[*]} ($JAVA_VERSION); worker start ${CONNECT_START_S}s (not timed)"
  echo "            $(jq -r 'to_entries | map("\(.key)=\(.value)") | join(" ")' <<<"$DBZ_TUNING_JSON") snapshot.mode=no_data${DBZ_EXTRA_SET:+ $DBZ_EXTRA_SET}"
  echo "            producer as Connect sets it: acks=all, max.in.flight.requests.per.connection=1, enable.idempotence=false; offset.flush.interval.ms=$DBZ_OFFSET_FLUSH_MS"
  echo "kafka       $KAFKA, JsonConverter with schemas (key and value), one partition per topic; PostgreSQL sslmode=$SSLMODE"
  echo "host        $(nproc) cpus, load average $LOADAVG_START at start, $LOADAVG_END at end$([ "$BUSY" = false ] || echo "  WARNING: busy at start, figures are pessimistic")"
  for i in "${!LABELS[@]}"; do
    w=${LABELS[$i]}
    echo
    jq -r --arg w "$w" '.workloads[] | select(.label == $w)
      | "\(.name): \(.rows) rows, \(.transactions) transactions of \(.rows_per_transaction), table \(.table); load \(.load_seconds) s, \(.wal_bytes / 1048576 * 10 | round / 10) MiB of WAL"' "$JSON"
    printf '  %-15s %8s %10s %8s %9s %12s %9s %8s  %s\n' system seconds events/s cpu-s "cpu-s/M" "walsnd cpu/M" "broker s" "other s" "peak RSS MiB"
    fmt_rows "$w"
    jq -r --arg w "$w" '.workloads[] | select(.label == $w)
      | "  startup         pgcdc: streaming \(.pgcdc.startup_s) s, first record \(.pgcdc.first_record_s) s after start; debezium: first record \(.debezium.first_record_s) s after POST",
        "  pgcdc in topic  every record in the topic \(.pgcdc.all_records_in_topic_s) s after start (\(.pgcdc.events_per_s_all_in_topic) events/s), confirmed to the slot at \(.pgcdc.seconds) s",
        "  ratios          pgcdc/pg_recvlogical events/s \(.ratios.pgcdc_to_ceiling_events_per_s); pgcdc/debezium events/s \(.ratios.pgcdc_to_debezium_events_per_s) (both timed to every record in the topic: \(.ratios.pgcdc_to_debezium_events_per_s_both_to_all_in_topic));",
        "                  cpu per event pgcdc/debezium \(.ratios.pgcdc_to_debezium_cpu_per_event); cpu per event pgcdc/its walsender \(.ratios.pgcdc_to_its_walsender_cpu_per_event) (debezium/its walsender \(.ratios.debezium_to_its_walsender_cpu_per_event))"' "$JSON"
    jq -r --arg w "$w" '.workloads[] | select(.label == $w) | .binary_tuples | select(. != null)
      | "  binary tuples   pg_recvlogical \(.pg_recvlogical.events_per_s) events/s, walsender \(.pg_recvlogical.walsender_cpu_s_per_million) cpu-s/M;",
        "                  pgcdc \(.pgcdc.events_per_s) events/s, \(.pgcdc.cpu_s_per_million) cpu-s/M, walsender \(.pgcdc.walsender_cpu_s_per_million) cpu-s/M, peak RSS \(.pgcdc.peak_rss_mib) MiB",
        "                  binary/text: walsender cpu \(.ratios.recvlogical_walsender_cpu_binary_to_text) (pg_recvlogical), \(.ratios.pgcdc_walsender_cpu_binary_to_text) (pgcdc); events/s \(.ratios.recvlogical_events_per_s_binary_to_text) (pg_recvlogical), \(.ratios.pgcdc_events_per_s_binary_to_text) (pgcdc); pgcdc cpu \(.ratios.pgcdc_cpu_binary_to_text); cpu per event pgcdc/its walsender \(.ratios.pgcdc_binary_to_its_walsender_cpu_per_event)"' "$JSON"
    jq -r --arg w "$w" '.workloads[] | select(.label == $w) | .pgcdc
      | "  pgcdc buffers   high-water marks: reader queue \(.reader_queue_bytes_max // "?") B, producer queue \(.producer_queue_bytes_max // "?") B (pgcdc.buffer.memory.bytes: a quarter and a half of it)"' "$JSON"
    echo "  pgcdc threads   $(threads_line "${WORKLOAD_DIRS[$i]}/pgcdc-threads.tsv" 5)"
    echo "  dbz threads     $(threads_line "${WORKLOAD_DIRS[$i]}/debezium-threads.tsv" 6)"
    jq -r --arg w "$w" '.workloads[] | select(.label == $w)
      | ["pg_recvlogical", "pgcdc", "debezium"][] as $s | .[$s]
      | select(.other_processes_cpu_s >= 0.5 and .other_processes_cpu_s / .seconds > 0.25)
      | "  WARNING: during the \($s) run other processes used \(.other_processes_cpu_s / .seconds * 100 | round) % of a cpu (\(.other_processes_top // "none above 0.1 cpu-s")): figures are pessimistic"' "$JSON"
    jq -r --arg w "$w" '.workloads[] | select(.label == $w)
      | ["pg_recvlogical", "pgcdc", "debezium"][] as $s | .[$s]
      | select(.host_steal_cpu_s >= 0.5 and .host_steal_cpu_s / .seconds > 0.1)
      | "  WARNING: during the \($s) run the hypervisor took \(.host_steal_cpu_s / .seconds * 100 | round) % of a cpu from this VM (steal): figures are pessimistic"' "$JSON"
  done
  echo
  echo "summary (events/s; ratios pgcdc/other)"
  printf '  %-8s %14s %10s %10s %13s %14s %16s %18s\n' workload pg_recvlogical pgcdc debezium "pgcdc/ceiling" "pgcdc/debezium" "cpu/ev pgcdc/dbz" "cpu/ev pgcdc/walsnd"
  jq -r '.workloads[] | [.label, .pg_recvlogical.events_per_s, .pgcdc.events_per_s, .debezium.events_per_s,
      .ratios.pgcdc_to_ceiling_events_per_s, .ratios.pgcdc_to_debezium_events_per_s,
      .ratios.pgcdc_to_debezium_cpu_per_event, .ratios.pgcdc_to_its_walsender_cpu_per_event] | map(tostring) | @tsv' "$JSON" \
    | awk -F'\t' '{ printf "  %-8s %14s %10s %10s %13s %14s %16s %18s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
  if [ "$REPEAT" -gt 1 ]; then
    echo
    echo "over the $REPEAT runs of each workload: min / median / max"
    jq -r '.repeats[] | . as $r
      | def mmm($x): if $x == null then "-" else "\($x.min) / \($x.median) / \($x.max)" end;
        "  \(.name): events/s pgcdc \(mmm(.events_per_s.pgcdc)), debezium \(mmm(.events_per_s.debezium)), pg_recvlogical \(mmm(.events_per_s.pg_recvlogical))",
        "    pgcdc/debezium events/s \(mmm(.ratios.pgcdc_to_debezium_events_per_s)); pgcdc/ceiling \(mmm(.ratios.pgcdc_to_ceiling_events_per_s))",
        "    cpu per event pgcdc/debezium \(mmm(.ratios.pgcdc_to_debezium_cpu_per_event)); pgcdc/its walsender \(mmm(.ratios.pgcdc_to_its_walsender_cpu_per_event))",
        "    pgcdc peak RSS MiB \(mmm(.pgcdc_peak_rss_mib)); broker cpu-s while pgcdc \(mmm(.broker_cpu_s.pgcdc)), while debezium \(mmm(.broker_cpu_s.debezium))"' "$JSON"
  fi
  echo
  echo "report: $JSON ($TOTAL_S s in all)"
  echo "logs:   $RUN, Connect: $CONNECT_RUN/logs"
}
if [ "$SNAPSHOT_WORKLOAD" = 1 ]; then
  snapshot_args=()
  [ "$MODE" = default ] || snapshot_args=("--$MODE")
  "$ROOT/scripts/bench-snapshot.sh" ${snapshot_args[@]+"${snapshot_args[@]}"}
fi
