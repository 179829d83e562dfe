#!/usr/bin/env bash
# Latency benchmark: commit -> Kafka broker append time of single-row transactions committed at a
# steady rate, for pgcdc (target/release/pgcdc, default settings) and for Debezium 3.6.1.Final's
# PostgreSQL connector on Kafka Connect, one system at a time (never both at once).
#
# Usage: scripts/bench-latency.sh [--help]
#        scripts/bench-latency.sh --delete-topics   delete the topics killed runs left (lat<stamp>*), exit
#        scripts/bench-latency.sh --report FILE     print the summary of an earlier run's JSON report
#
# For each system (BENCH_SYSTEMS) and rate (BENCH_RATES), one run (see bench/README.md):
#   1. waits while a throughput bench (scripts/bench-compare.sh, scripts/bench.sh) runs;
#   2. a fresh database (pgcdc_latency) with table t (id bigserial pk, n int, label text,
#      created_at timestamptz) and publication lat_pub; the run's topic created beforehand with
#      message.timestamp.type=LogAppendTime (bench/CreateTopic.java), one partition;
#   3. starts the system (its slot is lat_pgcdc or lat_dbz, created by the system), commits one
#      probe row and waits until it is in the topic;
#   4. pgbench -R <rate> -T BENCH_SECONDS: one INSERT per transaction, synchronous_commit=on;
#      the first BENCH_WARMUP seconds are warm-up (left out of the latency figures and the cpu);
#   5. waits until the topic holds every row, stops the system, reads the topic back
#      (bench/LatencyReport.java): latency = the record's LogAppendTime - source.ts_us (the commit
#      time) for every record; p50/p90/p99/p99.9/max after warm-up, one-second windows (by commit
#      time) whose max exceeds BENCH_BURST_MS ("bursts"), each with what happened around it
#      (PostgreSQL checkpoints, GC pauses of the Connect JVM and of the broker, log lines, segment
#      rolls, cpu); checks that the records are exactly the rows inserted;
#   6. cpu of the system (process and per thread), its walsender and the broker during the
#      steady phase, per event; record batches the broker appended (= produce requests).
# Report on stdout and in target/bench/latency-<UTC stamp>.json, run files in
# target/bench/latency-<stamp>/. Database, slots, topics and the Connect worker are removed at
# the end, also on failure and Ctrl-C.
#
# Environment (defaults in brackets):
#   BENCH_RATES ["2000 10000"]   transactions per second, one run per rate and system
#   BENCH_TX_ROWS [1]            rows each transaction inserts (one INSERT): events/s are
#                                BENCH_RATES x BENCH_TX_ROWS
#   BENCH_SECONDS [60]           pgbench duration of each run
#   BENCH_WARMUP [5]             seconds at the start of each run left out of the figures
#   BENCH_SYSTEMS ["pgcdc debezium debezium-default"]  debezium: tuned for latency
#                                (poll.interval.ms=BENCH_DBZ_POLL_MS, producer linger.ms=0 and
#                                batch.size=BENCH_DBZ_BATCH_BYTES); debezium-default: the
#                                connector's and Connect's defaults
#   BENCH_DBZ_POLL_MS [10]       poll.interval.ms of the tuned Debezium (its default is 500)
#   BENCH_DBZ_BATCH_BYTES [1048576]  producer batch.size of the tuned Debezium (the default,
#                                16384, holds 4 of these 3.3 KB records, and Connect allows one
#                                request in flight: too few records per round trip for 10,000/s)
#   BENCH_CLIENTS [8]  BENCH_THREADS [2]   pgbench -c and -j
#   BENCH_LATENCY_LIMIT_MS [1000] pgbench -L: transactions that would start later than this
#                                behind schedule are skipped (and counted)
#   BENCH_SYNC_COMMIT [on]       synchronous_commit of the pgbench sessions (the test server's
#                                own default is off, which delays WAL by up to wal_writer_delay)
#   BENCH_BURST_MS [50]          latency threshold of a burst window
#   BENCH_SET [""]  BENCH_DBZ_SET [""]  extra pgcdc / Debezium connector settings, key=value ...
#   BENCH_CONNECT_HEAP ["-Xms256m -Xmx1g"]  heap of the Connect worker's JVM
#   BENCH_JVM_WARMUP [30]        seconds of load (at the highest rate, not measured) that warm up
#                                the fresh Connect JVM before its first measured run; 0: none
#   BENCH_BROKER_GC_LOG [1]      1: log the broker's GC pauses during each run (jcmd VM.log,
#                                switched off again after the run)
#   BENCH_QUIET_WAIT [3600]      seconds to wait for a running throughput bench before failing
#   BENCH_DRAIN_TIMEOUT [180]    seconds allowed for the topic to hold every row after pgbench
#   BENCH_PG_SSLMODE [disable]   BENCH_NO_BUILD [0]   BENCH_SERVICES [start]
#   BENCH_KAFKA_LIB [target/services/kafka/lib]   BENCH_LATENCY_DB [pgcdc_latency]
#   PGCDC_LOG [info]             pgcdc's log filter (debug: status updates and more, to
#                                correlate bursts; the log is in the run directory)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
# The Kafka Connect helpers of the differential harness (connect_*, launch, rest, stop_pid),
# then the bench helpers (whose now() replaces the harness's).
# shellcheck source=scripts/debezium/lib.sh
. "$ROOT/scripts/debezium/lib.sh"
# shellcheck source=scripts/bench-lib.sh
. "$ROOT/scripts/bench-lib.sh"
log() { printf 'bench-latency: %s\n' "$*" >&2; }
die() { printf 'bench-latency: ERROR: %s\n' "$*" >&2; exit 1; }
unset PGOPTIONS   # set by the harness's lib.sh; the sessions run with the server's defaults

usage() { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

# The readable report, from the JSON alone (also: scripts/bench-latency.sh --report FILE).
print_summary() {
  local JSON=$1 BURST_MS
  echo
  jq -r '(.runs[0].burst_threshold_ms // 50) as $burst | .workload as $w
    | "=== commit -> Kafka append latency, pgcdc and Debezium (\(.date)) ===",
      "workload    INSERT transactions of \($w.rows_per_transaction // 1) row(s) at a fixed rate (pgbench -R, -c \($w.pgbench_clients) -j \($w.pgbench_threads), synchronous_commit=\($w.synchronous_commit)), \($w.seconds_per_run) s per run; first \($w.warmup_seconds) s are warm-up",
      "latency     broker LogAppendTime - source.ts_us (commit), every record; burst = 1-s window (by commit time) with max > \($burst) ms",
      "pgcdc       \(.pgcdc.binary): build \(.pgcdc.git_commit) (+\(.pgcdc.uncommitted_source_files) uncommitted source files), binary \(.pgcdc.binary_mtime); default settings\(if .pgcdc.extra_set != "" then "; BENCH_SET: \(.pgcdc.extra_set)" else "" end)",
      (if any(.runs[]; .system != "pgcdc") then
        "debezium    \(.debezium.connector) on Kafka Connect \(.debezium.kafka_connect) standalone, \(.debezium.worker.heap); offset.flush.interval.ms=\(.debezium.worker["offset.flush.interval.ms"]); JVM warm-up \(.debezium.jvm_warmup_seconds) s (not measured)",
        "            debezium: poll.interval.ms=\(.debezium.tuned["poll.interval.ms"]) producer.override.linger.ms=0 producer.override.batch.size=\(.debezium.tuned["producer.override.batch.size"] // "16384"); debezium-default: poll.interval.ms=500, linger.ms=5, batch.size=16384 (defaults)\(if .debezium.extra_set != "" then "; BENCH_DBZ_SET: \(.debezium.extra_set)" else "" end)"
       else empty end),
      "host        \(.host.cpus) cpus, load average \(.host.loadavg_at_start) at start, \(.host.loadavg_at_end) at end\(if .host.busy_at_start then "  WARNING: busy at start, figures are pessimistic" else "" end)",
      ""' "$JSON"
  BURST_MS=$(jq -r '.runs[0].burst_threshold_ms // 50' "$JSON")
  printf '%-6s %-17s %9s %13s %7s %8s %7s %7s %7s %7s %7s %7s %6s\n' rate system "tx/s" "lag avg/max" skipped records p50 p90 p99 p99.9 max "n>${BURST_MS}ms" bursts
  jq -r '.runs[] | [.rate, .system, (.pgbench.achieved_tps * 10 | round / 10),
      "\(.pgbench.schedule_lag_avg_ms)/\(.pgbench.schedule_lag_max_ms)", .pgbench.skipped,
      "\(.records)\(if .verified then "" else "!" end)",
      .latency_ms.p50, .latency_ms.p90, .latency_ms.p99, .latency_ms.p99_9, .latency_ms.max,
      .records_over_threshold, (.bursts | length)] | map(tostring) | @tsv' "$JSON" \
    | awk -F'\t' '{ printf "%-6s %-17s %9s %13s %7s %8s %7s %7s %7s %7s %7s %7s %6s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 }'
  echo "(latencies in ms; tx/s and schedule lag in ms as pgbench reports them; records: read back, checked against the rows inserted)"
  echo
  echo "the two legs, from the envelope's ts_us (when the connector made the event), ms p50/p99/p99.9/max:"
  printf '%-6s %-17s %-30s %-30s\n' rate system "commit -> connector" "connector -> broker append"
  jq -r '.runs[] | [.rate, .system,
      (.commit_to_connector_ms | if . == null then "-" else "\(.p50)/\(.p99)/\(.p99_9)/\(.max)" end),
      (.connector_to_append_ms | if . == null then "-" else "\(.p50)/\(.p99)/\(.p99_9)/\(.max)" end)] | map(tostring) | @tsv' "$JSON" \
    | awk -F'\t' '{ printf "%-6s %-17s %-30s %-30s\n", $1, $2, $3, $4 }'
  echo
  echo "cpu during the steady phase (end of warm-up to end of pgbench): us of cpu per event of the system (process), its"
  echo "walsender, the broker and the load (pgbench and its backends); seconds the first three were runnable but waiting for"
  echo "a cpu; cpu-s of all other processes; host busy % of all cpus; cpu pressure (PSI some: % of the time a task waited"
  echo "for a cpu); record batches the broker appended and records per batch"
  printf '%-6s %-17s %8s %8s %9s %8s %8s  %8s %9s %8s  %8s %6s %6s %8s %8s\n' rate system events system walsender broker pgbench "wait sys" "wait wals" "wait brk" "other s" "busy%" "psi%" batches "rec/bat"
  jq -r '.runs[] | .steady_phase as $c | [.rate, .system, $c.events, $c.system_cpu_us_per_event,
      $c.walsender_cpu_us_per_event, $c.broker_cpu_us_per_event, $c.load_generator_cpu_us_per_event,
      $c.runqueue_wait_s.system, $c.runqueue_wait_s.walsender,
      $c.runqueue_wait_s.broker, $c.other_processes_cpu_s,
      (if $c.seconds > 0 then ($c.host_busy_cpu_s / $c.seconds / $cpus * 100 | round) else null end), $c.cpu_pressure_some_pct,
      .kafka.record_batches_measured, .kafka.records_per_batch_measured] | map(tostring) | @tsv' --argjson cpus "$(jq '.host.cpus' "$JSON")" "$JSON" \
    | awk -F'\t' '{ printf "%-6s %-17s %8s %8s %9s %8s %8s  %8s %9s %8s  %8s %6s %6s %8s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 }'
  echo "busiest threads of the system (cpu-s / s waiting for a cpu):"
  jq -r '.runs[] | "  \(.rate)/s \(.system): " + ([.steady_phase.system_threads[:5][] | "\(.name)\(if .threads > 1 then "(x\(.threads))" else "" end) \(.cpu_s)/\(.runqueue_wait_s)"] | join(", "))' "$JSON"
  echo
  echo "bursts (1-s windows by commit time with max > $BURST_MS ms), with what happened from 1 s before to the worst record's append:"
  jq -r '.runs[] | . as $r | if (.bursts | length) == 0 then "  \($r.rate)/s \($r.system): none" else
      (if (.bursts | length) > 6 then "  \($r.rate)/s \($r.system): \(.bursts | length) bursts in \(.seconds_measured) s; the first 6:" else empty end),
      (.bursts[:6][] | "  \($r.rate)/s \($r.system) \(.second_utc): max \(.max_ms) ms, p99 \(.p99_ms) ms, \(.records_over_threshold) of \(.records) records over; worst committed \(.worst_commit_utc | .[11:]), appended \(.worst_append_utc | .[11:]) (commit -> connector \(.worst_commit_to_connector_ms) ms, connector -> append \(.worst_connector_to_append_ms) ms)"
        + (if (.events | length) == 0 then "" else "\n" + ([.events[:6][] | "      \(.t_ms / 1000 | strftime("%H:%M:%S")).\(.t_ms % 1000 | tostring | ("00" + .)[-3:]) \(.source): \(.text[:150])"] | join("\n"))
           + (if (.events | length) > 6 then "\n      ... \((.events | length) - 6) more in the JSON" else "" end) end)
        + (if (.cpu_pct | length) > 0 then "\n      cpu % per second: " + ([.cpu_pct[] | "system \(.system_pct) walsender \(.walsender_pct) broker \(.broker_pct) host \(.host_busy_pct) (cpu pressure \(.cpu_pressure_pct // "-"))"] | join(" | ")) else "" end)
        + (if (.pgbench | length) > 0 then "\n      pgbench per second: " + ([.pgbench[] | "commit latency \(.commit_latency_ms) ms, lag \(.schedule_lag_ms) ms"] | join(" | ")) else "" end))
      end' "$JSON"
  jq -r '.runs[] | select((.throughput_bench_seconds // 0) > 0) | "WARNING: a throughput bench ran during \(.throughput_bench_seconds) s of \(.rate)/s \(.system): its figures are not clean"' "$JSON"
  echo
  jq -r '"report: '"$JSON"' (\(.total_seconds) s in all)", "logs:   \(.run_dir)"' "$JSON"
}

DELETE_TOPICS_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --delete-topics) DELETE_TOPICS_ONLY=1 ;;
    --report)
      [ -r "${2:-}" ] || die "--report needs a report file (target/bench/latency-<stamp>.json)"
      print_summary "$2"
      exit 0 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done

read -r -a RATES <<<"${BENCH_RATES:-2000 10000}"
RUN_SECONDS=${BENCH_SECONDS:-60}
WARMUP=${BENCH_WARMUP:-5}
read -r -a SYSTEMS <<<"${BENCH_SYSTEMS:-pgcdc debezium debezium-default}"
TX_ROWS=${BENCH_TX_ROWS:-1}
DBZ_POLL_MS=${BENCH_DBZ_POLL_MS:-10}
DBZ_BATCH_BYTES=${BENCH_DBZ_BATCH_BYTES:-1048576}
CLIENTS=${BENCH_CLIENTS:-8}
THREADS=${BENCH_THREADS:-2}
LATENCY_LIMIT_MS=${BENCH_LATENCY_LIMIT_MS:-1000}
SYNC_COMMIT=${BENCH_SYNC_COMMIT:-on}
BURST_MS=${BENCH_BURST_MS:-50}
EXTRA_SET=${BENCH_SET:-}
DBZ_EXTRA_SET=${BENCH_DBZ_SET:-}
read -r -a CONNECT_HEAP <<<"${BENCH_CONNECT_HEAP:--Xms256m -Xmx1g}"   # read by lib.sh's connect_launch
BROKER_GC_LOG=${BENCH_BROKER_GC_LOG:-1}
JVM_WARMUP=${BENCH_JVM_WARMUP:-30}
QUIET_WAIT=${BENCH_QUIET_WAIT:-3600}
DRAIN_TIMEOUT=${BENCH_DRAIN_TIMEOUT:-180}
SSLMODE=${BENCH_PG_SSLMODE:-disable}
NO_BUILD=${BENCH_NO_BUILD:-0}
SERVICES=${BENCH_SERVICES:-start}
KAFKA_LIB=${BENCH_KAFKA_LIB:-$ROOT/target/services/kafka/lib}
DB=${BENCH_LATENCY_DB:-pgcdc_latency}
export PGCDC_LOG=${PGCDC_LOG:-info}

[ ${#RATES[@]} -gt 0 ] || die "BENCH_RATES is empty"
{ is_uint "$TX_ROWS" && [ "$TX_ROWS" -gt 0 ]; } || die "BENCH_TX_ROWS=$TX_ROWS: expected a positive integer"
for r in "${RATES[@]}"; do { is_uint "$r" && [ "$r" -gt 0 ]; } || die "BENCH_RATES: '$r' is not a positive integer"; done
[ ${#SYSTEMS[@]} -gt 0 ] || die "BENCH_SYSTEMS is empty"
for s in "${SYSTEMS[@]}"; do
  case "$s" in pgcdc|debezium|debezium-default) ;; *) die "BENCH_SYSTEMS: unknown system '$s' (pgcdc, debezium, debezium-default)" ;; esac
done
check_positive() { { is_uint "$2" && [ "$2" -gt 0 ]; } || die "$1=$2: expected a positive integer"; }
check_positive BENCH_SECONDS "$RUN_SECONDS"
check_positive BENCH_CLIENTS "$CLIENTS"
check_positive BENCH_THREADS "$THREADS"
check_positive BENCH_DBZ_POLL_MS "$DBZ_POLL_MS"
check_positive BENCH_DBZ_BATCH_BYTES "$DBZ_BATCH_BYTES"
check_positive BENCH_LATENCY_LIMIT_MS "$LATENCY_LIMIT_MS"
check_positive BENCH_BURST_MS "$BURST_MS"
check_positive BENCH_QUIET_WAIT "$QUIET_WAIT"
check_positive BENCH_DRAIN_TIMEOUT "$DRAIN_TIMEOUT"
is_uint "$JVM_WARMUP" || die "BENCH_JVM_WARMUP=$JVM_WARMUP: expected a non-negative integer"
is_uint "$WARMUP" || die "BENCH_WARMUP=$WARMUP: expected a non-negative integer"
[ "$WARMUP" -lt "$RUN_SECONDS" ] || die "BENCH_WARMUP=$WARMUP must be shorter than BENCH_SECONDS=$RUN_SECONDS"
[[ "$DB" =~ ^[a-z_][a-z0-9_]*$ ]] || die "BENCH_LATENCY_DB=$DB: use lower-case letters, digits and _"
case "$SERVICES" in start|running) ;; *) die "BENCH_SERVICES=$SERVICES: expected start or running" ;; esac
case "$SSLMODE" in disable|allow|prefer|require) ;; *) die "BENCH_PG_SSLMODE=$SSLMODE: expected disable, allow, prefer or require" ;; esac
case "$SYNC_COMMIT" in on|off|local|remote_write|remote_apply) ;; *) die "BENCH_SYNC_COMMIT=$SYNC_COMMIT: not a synchronous_commit value" ;; esac
case "$BROKER_GC_LOG" in 0|1) ;; *) die "BENCH_BROKER_GC_LOG=$BROKER_GC_LOG: expected 0 or 1" ;; esac

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$ROOT/target/bench"
RUN="$OUT/latency-$STAMP"
JSON="$OUT/latency-$STAMP.json"
PUB=lat_pub
SLOT_PGCDC=lat_pgcdc
SLOT_DBZ=lat_dbz
SLOTS=("$SLOT_PGCDC" "$SLOT_DBZ")
PGCDC="$ROOT/target/release/pgcdc"
TOPIC_REGEX_ALL='lat[0-9]{8}T[0-9]{6}Zr[0-9]+[a-z]+\..*'
BENCH_APP=pgcdc_latency            # application_name of q (bench-lib.sh)
CLASSES="$OUT/latency-classes"     # bench/CreateTopic.java and bench/LatencyReport.java, compiled
# This bench's own Connect worker, run by scripts/debezium/lib.sh's functions with another REST
# port and state directory than the harness's (58083) and the throughput bench's (58183).
DBZ_REST_PORT=58283
CONNECT_RUN="$OUT/latency-connect"
DBZ_OFFSET_FLUSH_MS=60000          # Connect's default offset.flush.interval.ms
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

bench_tools
need_pkg curl curl
need_pkg pgbench postgresql
command -v javac >/dev/null 2>&1 || die "missing javac (a JDK 17+)"
[ -d "$KAFKA_LIB" ] || die "no broker jars in $KAFKA_LIB (scripts/services.sh start kafka fills it)"
NEED_DBZ=0
for s in "${SYSTEMS[@]}"; do [ "$s" = pgcdc ] || NEED_DBZ=1; done
DBZ_VERSION=null
if [ "$NEED_DBZ" = 1 ]; then
  "$ROOT/scripts/debezium/setup.sh" 2>&1 | sed 's/^/  /' >&2
  DBZ_VERSION=$(cut -d: -f2 "$PLUGINS/.complete")
fi
bench_build
if [ ! -f "$CLASSES/LatencyReport.class" ] || [ "$ROOT/bench/LatencyReport.java" -nt "$CLASSES/LatencyReport.class" ] \
   || [ ! -f "$CLASSES/CreateTopic.class" ] || [ "$ROOT/bench/CreateTopic.java" -nt "$CLASSES/CreateTopic.class" ]; then
  mkdir -p "$CLASSES"
  javac -cp "$KAFKA_LIB/*" -d "$CLASSES" "$ROOT/bench/CreateTopic.java" "$ROOT/bench/LatencyReport.java" 2>"$RUN/javac.log" \
    || { cat "$RUN/javac.log" >&2; die "javac bench/CreateTopic.java bench/LatencyReport.java failed"; }
fi
CONN_BASE="host=$PG_HOST port=$PG_PORT user=$PG_USER sslmode=$SSLMODE"
KAFKA_PID=$("$ROOT/scripts/services.sh" kafka-pid kafka 2>/dev/null || true)
[ -n "$KAFKA_PID" ] || log "WARNING: the broker's pid is unknown (services from another checkout?): no broker cpu, GC or batch figures"
# The broker's log directory (from its server.properties): the run's partition is read there to
# count record batches. Empty when unknown.
KAFKA_LOG_DIR="" KAFKA_PROPS=""
if [ -n "$KAFKA_PID" ]; then
  KAFKA_PROPS=$(tr '\0' '\n' <"/proc/$KAFKA_PID/cmdline" | tail -n 1)
  [ ! -r "$KAFKA_PROPS" ] || KAFKA_LOG_DIR=$(sed -n 's/^log\.dirs=\([^,]*\).*/\1/p' "$KAFKA_PROPS" | head -n 1)
fi
PG_LOG="$ROOT/target/services/pg/log/postgresql.log"   # scripts/services.sh's server log
[ -r "$PG_LOG" ] || PG_LOG=""
PG_VERSION=$(q postgres -c "SHOW server_version")

# ---------------------------------------------------------------------------------------------
# Clean-up (also on failure / Ctrl-C)
# ---------------------------------------------------------------------------------------------

PGCDC_PID="" PGBENCH_PID="" SAMPLER_PID="" CONNECT_PID="" BROKER_GC_FILE=""
OBJECTS_MAY_EXIST=0 TOPIC_REGEX_RUN="lat${STAMP}r[0-9]+[a-z]+\\..*" TOPICS_MAY_EXIST=0

# Stops a background process of ours (SIGTERM, SIGKILL after $2 seconds), if it is still there.
stop_bg() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && stop_pid "$1" "$2" "$3"; return 0; }

broker_gc_log_off() {
  [ -n "$BROKER_GC_FILE" ] || return 0
  timeout 30 jcmd "$KAFKA_PID" VM.log output="file=$BROKER_GC_FILE" what=all=off >/dev/null 2>&1 \
    || log "WARNING: could not switch the broker's GC log to $BROKER_GC_FILE off (jcmd $KAFKA_PID VM.log)"
  BROKER_GC_FILE=""
}

cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  stop_bg "$SAMPLER_PID" 5 sampler
  if [ -n "$PGBENCH_PID" ]; then   # /usr/bin/time: stop pgbench under it first
    for p in $(pgrep -P "$PGBENCH_PID" 2>/dev/null); do stop_bg "$p" 10 pgbench; done
    stop_bg "$PGBENCH_PID" 5 time
  fi
  stop_bg "$PGCDC_PID" 40 pgcdc
  broker_gc_log_off
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
trap 'exit 130' INT
trap 'exit 143' TERM

active=$(q postgres -c "SELECT string_agg(slot_name || ' (pid ' || active_pid || ')', ', ') FROM pg_replication_slots WHERE slot_name IN ('$SLOT_PGCDC', '$SLOT_DBZ') AND active")
[ -z "$active" ] || die "slots in use, is another bench-latency running? $active"

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

walsender_pid() { q postgres -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$1' AND active"; }
# key value ... -> a JSON object; numbers become numbers, "" and null null, true/false booleans.
mkjson() {
  jq -n '[$ARGS.positional | _nwise(2) | {(.[0]): (.[1]
    | if test("^-?[0-9]+(\\.[0-9]+)?$") then tonumber elif . == "" or . == "null" then null
      elif . == "true" then true elif . == "false" then false else . end)}] | add // {}' --args "$@"
}
# Is a throughput bench running? Prints its processes.
throughput_bench_running() { pgrep -af 'bench-compare\.sh|scripts/bench\.sh' 2>/dev/null; }

# Waits (up to BENCH_QUIET_WAIT seconds) while a throughput bench runs, so the two never measure
# at the same time.
wait_quiet() {
  local others deadline=$(( $(date +%s) + QUIET_WAIT )) said=0
  while others=$(throughput_bench_running) && [ -n "$others" ]; do
    if [ "$said" = 0 ]; then
      log "a throughput bench is running; waiting up to ${QUIET_WAIT}s for it to finish:"
      printf '%s\n' "$others" | cut -c1-160 | sed 's/^/    /' >&2
      said=1
    fi
    [ "$(date +%s)" -lt "$deadline" ] || die "a throughput bench was still running after ${QUIET_WAIT}s (BENCH_QUIET_WAIT)"
    sleep 2
  done
  [ "$said" = 0 ] || log "the throughput bench has finished"
}

# Cpu ticks (utime + stime) of /proc/$2/stat into the variable named $1; bash builtins only, so
# that the samplers fork nothing per reading.
ticks_into() {
  local -n _out=$1
  local line f
  if read -r line <"/proc/$2/stat" 2>/dev/null; then
    line=${line##*) }
    read -r -a f <<<"$line"
    _out=$(( f[11] + f[12] ))
  else
    _out=0
  fi
}

# Sum of the cpu ticks of processes $2... into the variable named $1; fails (leaving it as it
# was) when one of them is gone.
ticks_sum_into() {
  local -n _sum=$1
  local pid line f total=0
  shift
  for pid in "$@"; do
    read -r line <"/proc/$pid/stat" 2>/dev/null || return 1
    line=${line##*) }
    read -r -a f <<<"$line"
    total=$(( total + f[11] + f[12] ))
  done
  _sum=$total
}

# Nanoseconds all threads of $2 spent runnable but waiting for a cpu (schedstat), into the
# variable named $1; bash builtins only.
runq_into() {
  local -n _out=$1
  local t w sum=0
  for t in /proc/"$2"/task/*; do
    read -r _ w _ <"$t/schedstat" 2>/dev/null || continue
    sum=$(( sum + w ))
  done
  _out=$sum
}

# One line per live thread of $1: tid, name, cpu ticks, ns runnable but waiting for a cpu (the
# format of bench-lib.sh's thread_stats, read with bash builtins only).
threads_snapshot() {
  local t line comm f w
  for t in /proc/"$1"/task/*; do
    read -r line <"$t/stat" 2>/dev/null || continue
    comm=${line#*(}; comm=${comm%)*}
    line=${line##*) }
    read -r -a f <<<"$line"
    read -r _ w _ <"$t/schedstat" 2>/dev/null || w=0
    printf '%s\t%s\t%s\t%s\n' "${t##*/}" "$comm" "$(( f[11] + f[12] ))" "$w"
  done
}

# The host's total and idle (+ iowait) cpu ticks into the variables named $1 and $2 (the
# figures of bench-lib.sh's host_cpu, with bash builtins only).
host_cpu_into() {
  local -n _tot=$1 _idle=$2
  local line f1 f2 f3 f4 f5 f6 f7 f8
  read -r line </proc/stat
  read -r _ f1 f2 f3 f4 f5 f6 f7 f8 _ <<<"$line"
  _tot=$(( f1 + f2 + f3 + f4 + f5 + f6 + f7 + f8 )); _idle=$(( f4 + f5 ))
}

# Pressure stall information: microseconds some task waited for a cpu (or for I/O) since boot,
# into the variable named $1 (0 without PSI); bash builtins only.
psi_into() {
  local -n _psi=$1
  local kind=$2 line
  _psi=0
  [ -r "/proc/pressure/$kind" ] || return 0
  read -r line <"/proc/pressure/$kind" || return 0
  line=${line##*total=}
  [[ "$line" =~ ^[0-9]+$ ]] && _psi=$line
  return 0
}

# pressure_pct STALL_US_A STALL_US_B T_US_A T_US_B: % of the interval stalled, or null without PSI.
pressure_pct() {
  if [ "$2" = 0 ]; then echo null; return; fi
  awk -v d=$(( $2 - $1 )) -v t=$(( $4 - $3 )) 'BEGIN { if (t > 0) printf "%.1f", 100 * d / t; else print "null" }'
}

# Background: every second, the clock (ms) and the cpu ticks of the system under test, its
# walsender and the broker, the host's total and idle ticks, and whether a throughput bench runs.
sampler() {
  local sys=$1 ws=$2 a b c tot idle busy pc pi
  printf 't_ms\tsystem_ticks\twalsender_ticks\tbroker_ticks\thost_total\thost_idle\tthroughput_bench\tcpu_pressure_us\tio_pressure_us\n'
  while :; do
    ticks_into a "$sys"; ticks_into b "$ws"
    c=0; [ -z "$KAFKA_PID" ] || ticks_into c "$KAFKA_PID"
    host_cpu_into tot idle
    psi_into pc cpu; psi_into pi io
    busy=0
    if throughput_bench_running >"$D/throughput-bench.now"; then
      busy=1
      { date -u +%H:%M:%S; cat "$D/throughput-bench.now"; } >>"$D/throughput-bench.txt"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(( ${EPOCHREALTIME/[.,]/} / 1000 ))" "$a" "$b" "$c" "$tot" "$idle" "$busy" "$pc" "$pi"
    sleep 1
  done
}

# Records in partition 0 of topic $1 (high watermark; the topic is new, so low = 0).
topic_end() { kcat -Q -b "$KAFKA" -t "$1:0:-1" -m 10 2>/dev/null | awk '{ print $NF }'; }

# wait_topic TOPIC COUNT SECONDS WHAT: polls the topic until it holds COUNT records.
wait_topic() {
  local topic=$1 want=$2 secs=$3 what=$4 have="" deadline
  deadline=$(( $(date +%s) + secs ))
  while :; do
    have=$(topic_end "$topic" || true)
    [ "$have" != "$want" ] || return 0
    if [[ "$have" =~ ^[0-9]+$ ]] && [ "$have" -gt "$want" ]; then die "$what: $topic holds $have records, more than the $want rows"; fi
    system_alive || die "$what: the system under test is gone (see its log in $D)"
    [ "$(date +%s)" -lt "$deadline" ] || die "$what: $topic holds ${have:-?} of $want records after ${secs}s"
    sleep 0.2
  done
}

# ---------------------------------------------------------------------------------------------
# The systems
# ---------------------------------------------------------------------------------------------

start_connect() {
  local t0
  connect_common_config
  cat >>"$CONNECT_RUN/worker.properties" <<EOF
offset.storage.file.filename=$CONNECT_RUN/connect.offsets
# Lets a connector set producer.override.* (the tuned run sets linger.ms).
connector.client.config.override.policy=All
EOF
  t0=$(now)
  # GC pauses with the epoch in ms, to correlate with latency bursts.
  CONNECT_PID=$(JAVA_TOOL_OPTIONS="-Xlog:gc:file=$CONNECT_RUN/logs/gc.log:timemillis,uptime" \
                connect_launch org.apache.kafka.connect.cli.ConnectStandalone "$CONNECT_RUN/worker.properties")
  log "connect: starting Kafka Connect standalone (pid $CONNECT_PID, ${CONNECT_HEAP[*]}), REST 127.0.0.1:$DBZ_REST_PORT, broker $KAFKA (log: $CONNECT_RUN/logs/connect.log)"
  connect_wait_rest "$CONNECT_PID"
  CONNECT_START_S=$(fsub "$(now)" "$t0")
  log "connect: REST API up ${CONNECT_START_S}s after launch"
}

stop_connect() {
  [ -n "$CONNECT_PID" ] || return 0
  log "stopping the Connect worker"
  connect_stop
  CONNECT_PID=""
}

# The connector settings of a Debezium variant beyond the connection (JSON).
dbz_tuning_json() {
  case "$1" in
    debezium) jq -n --arg poll "$DBZ_POLL_MS" --arg batch "$DBZ_BATCH_BYTES" \
                '{"poll.interval.ms": $poll, "producer.override.linger.ms": "0", "producer.override.batch.size": $batch}' ;;
    *) echo '{}' ;;
  esac
}

system_alive() {
  case "$SYSTEM" in
    pgcdc) kill -0 "$PGCDC_PID" 2>/dev/null ;;
    *) kill -0 "$CONNECT_PID" 2>/dev/null && ! rest "/connectors/$CONNECTOR/status" 2>/dev/null | grep -q '"state":"FAILED"' ;;
  esac
}

start_system() {
  local kv extra=() set_args=() extra_json
  case "$SYSTEM" in
    pgcdc)
      jq -n \
        --arg host "$PG_HOST" --arg port "$PG_PORT" --arg user "$PG_USER" --arg pw "$PGPASSWORD" \
        --arg db "$DB" --arg ssl "$SSLMODE" --arg slot "$SLOT_PGCDC" --arg pub "$PUB" \
        --arg prefix "$PREFIX" --arg offsets "$D/pgcdc-offsets.json" --arg kafka "$KAFKA" '
        {name: "pgcdc-latency", config: {
          "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
          "database.hostname": $host, "database.port": $port, "database.user": $user,
          "database.password": $pw, "database.dbname": $db, "database.sslmode": $ssl,
          "plugin.name": "pgoutput", "slot.name": $slot, "publication.name": $pub,
          "publication.autocreate.mode": "disabled",
          "topic.prefix": $prefix, "snapshot.mode": "no_data",
          "offset.storage.file.filename": $offsets,
          "bootstrap.servers": $kafka
        }}' >"$D/connector.json"
      chmod 600 "$D/connector.json"   # holds the (local test) database password
      read -r -a extra <<<"$EXTRA_SET"
      for kv in ${extra[@]+"${extra[@]}"}; do
        [[ "$kv" == *=* ]] || die "BENCH_SET: '$kv' is not key=value"
        set_args+=(--set "$kv")
      done
      log "[$TAG] pgcdc: starting on slot $SLOT_PGCDC, topic $TOPIC (log: $D/pgcdc.log)"
      "$PGCDC" run --config "$D/connector.json" ${set_args[@]+"${set_args[@]}"} </dev/null >"$D/pgcdc.stdout" 2>"$D/pgcdc.log" &
      PGCDC_PID=$!
      SYSTEM_PID=$PGCDC_PID
      SLOT=$SLOT_PGCDC
      ;;
    *)
      read -r -a extra <<<"$DBZ_EXTRA_SET"
      for kv in ${extra[@]+"${extra[@]}"}; do [[ "$kv" == *=* ]] || die "BENCH_DBZ_SET: '$kv' is not key=value"; done
      extra_json=$(printf '%s\n' ${extra[@]+"${extra[@]}"} | jq -R -s 'split("\n") | map(select(length > 0) | capture("^(?<k>[^=]+)=(?<v>.*)$") | {(.k): .v}) | add // {}')
      jq -n \
        --arg name "$CONNECTOR" --arg host "$PG_HOST" --arg port "$PG_PORT" --arg user "$PG_USER" \
        --arg pw "$PGPASSWORD" --arg db "$DB" --arg ssl "$SSLMODE" --arg slot "$SLOT_DBZ" \
        --arg pub "$PUB" --arg prefix "$PREFIX" --argjson extra "$extra_json" \
        --argjson tuning "$(dbz_tuning_json "$SYSTEM")" '
        {name: $name, config: ({
          "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
          "tasks.max": "1",
          "database.hostname": $host, "database.port": $port, "database.user": $user,
          "database.password": $pw, "database.dbname": $db, "database.sslmode": $ssl,
          "plugin.name": "pgoutput", "slot.name": $slot, "publication.name": $pub,
          "publication.autocreate.mode": "disabled",
          "topic.prefix": $prefix, "snapshot.mode": "no_data"
        } + $tuning + $extra)}' >"$D/connector.json"
      chmod 600 "$D/connector.json"
      kill -0 "$CONNECT_PID" 2>/dev/null || die "the Connect worker (pid $CONNECT_PID) is gone (log: $CONNECT_RUN/logs/connect.log)"
      CONNECT_LOG0=$(wc -l <"$CONNECT_RUN/logs/connect.log" 2>/dev/null || echo 0)
      log "[$TAG] debezium: POST /connectors $CONNECTOR on slot $SLOT_DBZ, topic $TOPIC"
      connect_create "$D/connector.json"
      SYSTEM_PID=$CONNECT_PID
      SLOT=$SLOT_DBZ
      ;;
  esac
}

stop_system() {
  local deadline rc
  case "$SYSTEM" in
    pgcdc)
      log "[$TAG] pgcdc: SIGTERM"
      kill -TERM "$PGCDC_PID" 2>/dev/null || true
      deadline=$(( $(date +%s) + 60 ))
      while kill -0 "$PGCDC_PID" 2>/dev/null; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
          log "pgcdc did not stop within 60s of SIGTERM; sending SIGKILL"
          kill -KILL "$PGCDC_PID" 2>/dev/null || true
        fi
        sleep 0.05
      done
      set +e; wait "$PGCDC_PID"; rc=$?; set -e
      PGCDC_PID=""
      SYSTEM_EXIT=$rc
      [ "$rc" = 0 ] || die "[$TAG] pgcdc exited with $rc after SIGTERM (log: $D/pgcdc.log)"
      ;;
    *)
      curl -sS --max-time 60 -o /dev/null -X DELETE "http://127.0.0.1:$DBZ_REST_PORT/connectors/$CONNECTOR" \
        || die "connect: DELETE /connectors/$CONNECTOR failed"
      SYSTEM_EXIT=null
      ;;
  esac
  # The slot is released when the client is gone.
  deadline=$(( $(date +%s) + 60 ))
  while [ -n "$(walsender_pid "$SLOT")" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "[$TAG] slot $SLOT still active 60s after the system was stopped"
    sleep 0.1
  done
  if [ "$SYSTEM" != pgcdc ]; then
    sed -n "$(( CONNECT_LOG0 + 1 )),\$p" "$CONNECT_RUN/logs/connect.log" >"$D/connect.log" 2>/dev/null || true
  fi
}

# ---------------------------------------------------------------------------------------------
# Events around bursts: one TSV line per event (epoch ms, source, text) in the run window
# ---------------------------------------------------------------------------------------------

# UTC "YYYY-MM-DD[ T]HH:MM:SS[.,]fff..." at the start of a line -> epoch ms (awk, TZ=UTC).
AWK_ISO='function iso_ms(s,   d, frac) {
  d = substr(s, 1, 19); gsub(/[-T:]/, " ", d)
  frac = substr(s, 20); sub(/^[.,]/, "", frac); sub(/[^0-9].*$/, "", frac)
  frac = substr(frac "000", 1, 3)
  return sprintf("%.0f", mktime(d) * 1000 + frac)
}'

collect_events() { # window start ms, window end ms -> $D/events.tsv
  local t0=$1 t1=$2
  {
    # PostgreSQL: checkpoints and anything above LOG (the log grew since PG_LOG0).
    if [ -n "$PG_LOG" ]; then
      tail -c +"$(( PG_LOG0 + 1 ))" "$PG_LOG" 2>/dev/null \
        | TZ=UTC awk "$AWK_ISO"' /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9:.]+ UTC / && /checkpoint|WARNING|ERROR|FATAL|PANIC|autovacuum/ {
            t = iso_ms($1 "T" $2); line = $0; sub(/^[^]]*\] /, "", line); print t "\tpostgresql\t" substr(line, 1, 200) }'
    fi
    # GC pauses: the Connect JVM (Debezium runs) and the broker (jcmd VM.log).
    for f in "$D/connect-gc.log:connect-gc" "$D/broker-gc.log:broker-gc"; do
      [ -s "${f%:*}" ] || continue
      awk -v src="${f##*:}" '/Pause/ && match($0, /\[[0-9]+ms\]/) {
          t = substr($0, RSTART + 1, RLENGTH - 4); line = $0; sub(/^(\[[^]]*\])+ */, "", line); print t "\t" src "\t" line }' "${f%:*}"
    done
    # pgcdc's log (all of it at PGCDC_LOG=debug: status updates, flushes, ...).
    if [ -s "$D/pgcdc.log" ]; then
      strip_ansi "$D/pgcdc.log" | TZ=UTC awk "$AWK_ISO"' /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T/ {
          t = iso_ms($1); line = $0; sub(/^[^ ]+ +/, "", line); print t "\tpgcdc\t" substr(line, 1, 200) }'
    fi
    # Kafka Connect's log (offset commits, warnings).
    if [ -s "$D/connect.log" ]; then
      TZ=UTC awk "$AWK_ISO"' /^\[[0-9][0-9][0-9][0-9]-/ && !/"GET \/connectors/ {
          t = iso_ms(substr($0, 2)); line = $0; sub(/^\[[^]]*\] /, "", line); print t "\tconnect\t" substr(line, 1, 200) }' "$D/connect.log"
    fi
    # The broker's log (other clients creating topics, controller work, warnings).
    if [ -n "$BROKER_LOG" ] && [ -r "$BROKER_LOG" ]; then
      tail -c +"$(( BROKER_LOG0 + 1 ))" "$BROKER_LOG" 2>/dev/null | TZ=UTC awk "$AWK_ISO"' /^\[[0-9][0-9][0-9][0-9]-/ {
          t = iso_ms(substr($0, 2)); line = $0; sub(/^\[[^]]*\] /, "", line); print t "\tbroker\t" substr(line, 1, 200) }'
    fi
    # Segment rolls of the run's partition (the first batch of every segment but the first).
    jq -r '(.segments // [])[1:][] | select(.first_append_epoch_ms != null)
           | "\(.first_append_epoch_ms)\tbroker\tnew log segment \(.file) (segment roll)"' "$D/latency.json"
  } | awk -F'\t' -v a="$t0" -v b="$t1" '$1 >= a && $1 <= b' | sort -n -k1,1 >"$D/events.tsv"
}

# ---------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------

run_one() { # SYSTEM RATE [warm]: one measured run, or (warm) an unmeasured JVM warm-up run
  SYSTEM=$1 RATE=$2
  local mode=${3:-measure} secs=$RUN_SECONDS
  local max_id av_n av_last aa_n aa_last tag_sys tA_us=0 snapA=0 deadline rc rows records t0_us tB_us steady_s events_steady
  local cpuA cpuB wsA wsB brA brB hA iA hB iB ws_pid load0 overlap wqA wqB bqA=0 bqB=0 pcA pcB piA piB
  local pgb_pid="" backends=() found_load=0 ldA=-1 ldB=0
  case "$SYSTEM" in pgcdc) tag_sys=pgcdc ;; debezium) tag_sys=dbz ;; *) tag_sys=dbzdefault ;; esac
  TAG="$RATE/s $SYSTEM"
  D="$RUN/$RATE-$SYSTEM"
  PREFIX="lat${STAMP}r${RATE}${tag_sys}"     # letters and digits: a valid topic.prefix
  CONNECTOR="lat-$SYSTEM-$RATE"
  if [ "$mode" = warm ]; then
    secs=$JVM_WARMUP
    TAG="$TAG, JVM warm-up"
    D="$RUN/jvm-warmup"
    PREFIX="lat${STAMP}r${RATE}warmup"
    CONNECTOR="lat-warmup"
  fi
  TOPIC="$PREFIX.public.t"
  mkdir -p "$D"

  wait_quiet
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  log "=== [$TAG] $secs s at $RATE transactions/s (load average $load0) ==="
  OBJECTS_MAY_EXIST=1
  drop_bench_objects "$DB" "$PUB" "${SLOTS[@]}"   # leftovers of an interrupted run
  q postgres -c "CREATE DATABASE $DB"
  q "$DB" >/dev/null <<SQL
CREATE TABLE public.t (
  id bigserial PRIMARY KEY,
  n integer NOT NULL,
  label text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE PUBLICATION $PUB FOR TABLE public.t;
SQL
  TOPICS_MAY_EXIST=1
  java -Xmx128m -XX:TieredStopAtLevel=1 -XX:-UsePerfData -cp "$CLASSES:$KAFKA_LIB/*" CreateTopic \
      "$KAFKA" "$TOPIC" 1 1 message.timestamp.type=LogAppendTime >/dev/null 2>"$D/create-topic.err" \
    || { cat "$D/create-topic.err" >&2; die "[$TAG] could not create topic $TOPIC"; }

  start_system
  # Ready: the slot is active (the system created it and streams from it) and a probe row has
  # gone all the way to the topic.
  deadline=$(( $(date +%s) + 180 ))
  until ws_pid=$(walsender_pid "$SLOT") && [ -n "$ws_pid" ]; do
    system_alive || { tail -n 30 "$D/pgcdc.log" "$CONNECT_RUN/logs/connect.log" 2>/dev/null >&2 || true; die "[$TAG] the system failed during start-up"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "[$TAG] slot $SLOT not active within 180s"
    sleep 0.1
  done
  q "$DB" -c "INSERT INTO public.t (n, label) VALUES (0, 'probe')" >/dev/null
  wait_topic "$TOPIC" 1 180 "[$TAG] probe"
  # The walsender that streams (a client may have created the slot on another connection).
  ws_pid=$(walsender_pid "$SLOT")
  [ -n "$ws_pid" ] || die "[$TAG] slot $SLOT is not active after the probe"
  log "[$TAG] streaming (walsender pid $ws_pid); probe record arrived"

  # pgbench: one INSERT of TX_ROWS rows per transaction, at the target rate.
  if [ "$TX_ROWS" = 1 ]; then
    cat >"$D/pgbench.sql" <<'SQL'
\set n random(1, 1000000)
INSERT INTO public.t (n, label, created_at) VALUES (:n, 'row ' || :n, now());
SQL
  else
    cat >"$D/pgbench.sql" <<SQL
\\set n random(1, 1000000)
INSERT INTO public.t (n, label, created_at) SELECT :n + g, 'row ' || (:n + g), now() FROM generate_series(1, $TX_ROWS) g;
SQL
  fi
  PG_LOG0=0; [ -z "$PG_LOG" ] || PG_LOG0=$(stat -c %s "$PG_LOG")
  BROKER_LOG=""; BROKER_LOG0=0
  if [ -n "$KAFKA_PROPS" ]; then
    BROKER_LOG="$(dirname "$KAFKA_PROPS")/logs/server.log"
    if [ -r "$BROKER_LOG" ]; then BROKER_LOG0=$(stat -c %s "$BROKER_LOG"); else BROKER_LOG=""; fi
  fi
  if [ "$BROKER_GC_LOG" = 1 ] && [ -n "$KAFKA_PID" ] && command -v jcmd >/dev/null 2>&1; then
    BROKER_GC_FILE="$D/broker-gc.log"
    timeout 30 jcmd "$KAFKA_PID" VM.log output="file=$BROKER_GC_FILE" what=gc decorators=timemillis,uptime >/dev/null 2>&1 \
      || { log "WARNING: jcmd VM.log on the broker failed: no broker GC pauses"; BROKER_GC_FILE=""; }
  fi
  sampler "$SYSTEM_PID" "$ws_pid" >"$D/samples.tsv" 2>/dev/null &
  SAMPLER_PID=$!

  log "[$TAG] pgbench -R $RATE -T $secs -c $CLIENTS -j $THREADS (warm-up: the first $WARMUP s)"
  t0_us=${EPOCHREALTIME/[.,]/}
  PGAPPNAME=lat_pgbench PGOPTIONS="-c synchronous_commit=$SYNC_COMMIT" PGSSLMODE=$SSLMODE \
    /usr/bin/time -f '%U %S' -o "$D/pgbench.time" pgbench -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -n -M prepared -f "$D/pgbench.sql" \
      -R "$RATE" -L "$LATENCY_LIMIT_MS" -T "$secs" -c "$CLIENTS" -j "$THREADS" -P 1 "$DB" \
      >"$D/pgbench.out" 2>"$D/pgbench.err" </dev/null &
  PGBENCH_PID=$!
  tA_us=$(( t0_us + WARMUP * 1000000 ))
  deadline=$(( EPOCHSECONDS + secs + 120 ))
  # Polls without forking (bash builtins and clocks only) while the load runs.
  while kill -0 "$PGBENCH_PID" 2>/dev/null; do
    if [ "$found_load" = 0 ] && [ "${EPOCHREALTIME/[.,]/}" -ge $(( t0_us + 1000000 )) ]; then
      # During the warm-up (forks allowed): pgbench's pid (under /usr/bin/time) and the pids of
      # the backends serving it, to measure the load generator's own cpu.
      pgb_pid=$(pgrep -P "$PGBENCH_PID" | head -n 1 || true)
      read -r -a backends < <(q postgres -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE application_name = 'lat_pgbench'" || true)
      found_load=1
    fi
    if [ "$snapA" = 0 ] && [ "${EPOCHREALTIME/[.,]/}" -ge "$tA_us" ]; then
      # Start of the steady phase: cpu counters.
      tA_us=${EPOCHREALTIME/[.,]/}
      ticks_into cpuA "$SYSTEM_PID"; ticks_into wsA "$ws_pid"
      brA=0; [ -z "$KAFKA_PID" ] || { ticks_into brA "$KAFKA_PID"; runq_into bqA "$KAFKA_PID"; }
      runq_into wqA "$ws_pid"
      host_cpu_into hA iA
      psi_into pcA cpu; psi_into piA io
      ticks_sum_into ldA "$pgb_pid" ${backends[@]+"${backends[@]}"} || ldA=-1
      threads_snapshot "$SYSTEM_PID" >"$D/threads.before"
      snapA=1
    fi
    # The load generator's cpu so far (its processes are gone at the end of pgbench).
    [ "$snapA" = 0 ] || ticks_sum_into ldB "$pgb_pid" ${backends[@]+"${backends[@]}"} || true
    system_alive_cheap || die "[$TAG] the system under test exited during the load (see $D)"
    [ "$EPOCHSECONDS" -lt "$deadline" ] || die "[$TAG] pgbench still running ${secs}+120 s after its start"
    sleep 0.1
  done
  # End of the steady phase.
  tB_us=${EPOCHREALTIME/[.,]/}
  ticks_into cpuB "$SYSTEM_PID"; ticks_into wsB "$ws_pid"
  brB=0; [ -z "$KAFKA_PID" ] || { ticks_into brB "$KAFKA_PID"; runq_into bqB "$KAFKA_PID"; }
  runq_into wqB "$ws_pid"
  host_cpu_into hB iB
  psi_into pcB cpu; psi_into piB io
  threads_snapshot "$SYSTEM_PID" >"$D/threads.after"
  set +e; wait "$PGBENCH_PID"; rc=$?; set -e
  PGBENCH_PID=""
  [ "$rc" = 0 ] || { tail -n 20 "$D/pgbench.err" >&2; die "[$TAG] pgbench failed (exit $rc)"; }
  [ "$snapA" = 1 ] || [ "$mode" = warm ] || die "[$TAG] pgbench ended before the warm-up did"

  IFS='|' read -r rows max_id < <(q "$DB" -c "SELECT count(*), max(id) FROM public.t")
  events_steady=$(q "$DB" -c "SELECT count(*) FROM public.t WHERE label <> 'probe' AND created_at >= to_timestamp($tA_us / 1e6) AND created_at < to_timestamp($tB_us / 1e6)")
  log "[$TAG] pgbench done: $(( rows - 1 )) rows inserted; waiting for the topic to hold them"
  wait_topic "$TOPIC" "$rows" "$DRAIN_TIMEOUT" "[$TAG] drain"
  stop_system
  stop_bg "$SAMPLER_PID" 5 sampler; SAMPLER_PID=""
  broker_gc_log_off
  if [ "$mode" = warm ]; then
    delete_topics "${TOPIC//./\\.}"
    drop_bench_objects "$DB" "$PUB" "${SLOTS[@]}"
    OBJECTS_MAY_EXIST=0
    log "[$TAG] done (not measured)"
    return 0
  fi
  [ "$SYSTEM" = pgcdc ] || cp "$CONNECT_RUN/logs/gc.log" "$D/connect-gc.log" 2>/dev/null || true
  threads_summary "$D/threads.after" "$D/threads.before" >"$D/threads.tsv"
  IFS='|' read -r av_n aa_n av_last aa_last < <(q "$DB" -c "SELECT autovacuum_count, autoanalyze_count, last_autovacuum, last_autoanalyze FROM pg_stat_user_tables WHERE relname = 't'")

  # Read the topic back: latency of every record.
  log "[$TAG] reading $TOPIC back ($rows records)"
  local part_dir=""
  [ -z "$KAFKA_LOG_DIR" ] || [ ! -d "$KAFKA_LOG_DIR/$TOPIC-0" ] || part_dir="$KAFKA_LOG_DIR/$TOPIC-0"
  java -Xmx1g -XX:-UsePerfData -cp "$CLASSES:$KAFKA_LIB/*" LatencyReport \
      "$KAFKA" "$TOPIC" 1 "$tA_us" "$BURST_MS" "$D" ${part_dir:+"$part_dir"} >"$D/latency.json" 2>"$D/latency.err" \
    || { cat "$D/latency.err" >&2; die "[$TAG] LatencyReport failed"; }
  records=$(jq -r .records "$D/latency.json")
  delete_topics "${TOPIC//./\\.}"
  drop_bench_objects "$DB" "$PUB" "${SLOTS[@]}"
  OBJECTS_MAY_EXIST=0

  collect_events "$(( t0_us / 1000 - 2000 ))" "$(( tB_us / 1000 + 5000 ))"
  rm -f "$D/throughput-bench.now"
  overlap=$(awk -F'\t' 'NR > 1 && $7 == 1 { n++ } END { print n + 0 }' "$D/samples.tsv")
  [ "$overlap" = 0 ] || log "[$TAG] WARNING: a throughput bench ran during $overlap s of this run ($D/throughput-bench.txt): its figures are not clean"

  steady_s=$(awk -v a="$tA_us" -v b="$tB_us" 'BEGIN { printf "%.3f", (b - a) / 1e6 }')
  local sys_cpu ws_cpu br_cpu host_s other_s sys_wait ws_wait br_wait load_cpu
  sys_wait=$(awk -F'\t' '{ w += $4 } END { printf "%.2f", w }' "$D/threads.tsv")
  ws_wait=$(ns_to_s $(( wqB - wqA )))
  br_wait=null; [ -z "$KAFKA_PID" ] || br_wait=$(ns_to_s $(( bqB - bqA )))
  sys_cpu=$(ticks_to_s $(( cpuB - cpuA ))); ws_cpu=$(ticks_to_s $(( wsB - wsA )))
  br_cpu=null; [ -z "$KAFKA_PID" ] || br_cpu=$(ticks_to_s $(( brB - brA )))
  host_s=$(host_busy_s "$hA" "$iA" "$hB" "$iB")
  # The load generator: pgbench and the backends serving it (its last reading is at most 0.1 s
  # before the end of pgbench, while its processes still existed).
  load_cpu=null
  [ "${#backends[@]}" = 0 ] || [ -z "$pgb_pid" ] || [ "$ldA" -lt 0 ] || [ "$ldB" -lt "$ldA" ] \
    || load_cpu=$(ticks_to_s $(( ldB - ldA )))
  other_s=$(awk -v h="$host_s" -v a="$sys_cpu" -v b="$ws_cpu" -v c="$br_cpu" -v d="$load_cpu" \
    'BEGIN { printf "%.2f", h - a - b - (c == "null" ? 0 : c) - (d == "null" ? 0 : d) }')

  # pgbench's summary.
  local pgb
  pgb=$(awk '
    /^number of transactions actually processed:/ { split($6, a, "/"); tx = a[1] }
    /^number of failed transactions:/ { failed = $5 }
    /^number of transactions skipped:/ { skipped = $5 }
    /latency limit:/ { split($(NF - 1), a, "/"); late = a[1] }
    /^latency average =/ { lat = $4 }
    /^rate limit schedule lag:/ { avg = $6; mx = $8; sub(/\)/, "", mx) }
    /^tps =/ { tps = $3 }
    END { printf "%s %s %s %s %s %s %s %s", tx, failed, skipped, late, lat, avg, mx, tps }' "$D/pgbench.out")
  local pgb_a
  read -r -a pgb_a <<<"$pgb"
  mkjson target_tps "$RATE" achieved_tps "${pgb_a[7]:-}" transactions "${pgb_a[0]:-}" failed "${pgb_a[1]:-}" \
    skipped "${pgb_a[2]:-}" above_latency_limit "${pgb_a[3]:-}" latency_limit_ms "$LATENCY_LIMIT_MS" \
    latency_avg_ms "${pgb_a[4]:-}" schedule_lag_avg_ms "${pgb_a[5]:-}" schedule_lag_max_ms "${pgb_a[6]:-}" \
    clients "$CLIENTS" threads "$THREADS" seconds "$secs" synchronous_commit "$SYNC_COMMIT" \
    cpu_s_whole_run "$(awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { printf "%.2f", $1 + $2 }' "$D/pgbench.time")" >"$D/pgbench.json"

  # Per-second cpu (%) from the sampler, for the burst annotations.
  awk -F'\t' -v h="$CLK_TCK" 'NR == 2 { split($0, p, "\t"); next }
    NR > 2 { dt = ($1 - p[1]) / 1000; if (dt > 0 && $2 >= p[2] && $3 >= p[3] && $4 >= p[4]) {
      tot = $5 - p[5]; idle = $6 - p[6]
      printf "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", $1, ($2 - p[2]) / h / dt * 100, ($3 - p[3]) / h / dt * 100,
        ($4 - p[4]) / h / dt * 100, (tot > 0 ? 100 * (tot - idle) / tot : 0), ($8 - p[8]) / 1e4 / dt }
      split($0, p, "\t") }' "$D/samples.tsv" >"$D/cpu-per-second.tsv"

  # pgbench's per-second progress (-P 1) on the clock: t_ms, tps, commit latency ms, schedule lag ms.
  awk -v t0="$(( t0_us / 1000 ))" '$1 == "progress:" { lag = "null"
      for (i = 1; i < NF; i++) if ($i == "lag") lag = $(i + 1)
      printf "%.0f\t%s\t%s\t%s\n", t0 + $2 * 1000, $4, $7, lag }' "$D/pgbench.err" >"$D/pgbench-progress.tsv"

  jq -n --arg system "$SYSTEM" --argjson rate "$RATE" --arg topic "$TOPIC" --arg dir "$D" \
    --arg connector "$([ "$SYSTEM" = pgcdc ] || echo "$CONNECTOR")" \
    --argjson tuning "$(dbz_tuning_json "$SYSTEM")" \
    --slurpfile pgb "$D/pgbench.json" --slurpfile lat "$D/latency.json" \
    --argjson rows "$rows" --argjson records "$records" --argjson warmup "$WARMUP" \
    --arg t0 "$(date -u -d "@$(( t0_us / 1000000 ))" +%Y-%m-%dT%H:%M:%SZ)" \
    --argjson steady_s "$steady_s" --argjson events "$events_steady" \
    --argjson sys_cpu "$sys_cpu" --argjson ws_cpu "$ws_cpu" --argjson br_cpu "$br_cpu" \
    --argjson host_s "$host_s" --argjson other_s "$other_s" \
    --argjson sys_wait "$sys_wait" --argjson ws_wait "$ws_wait" --argjson br_wait "$br_wait" \
    --argjson load_cpu "$load_cpu" --argjson n_backends "${#backends[@]}" \
    --argjson psi_cpu "$(pressure_pct "$pcA" "$pcB" "$tA_us" "$tB_us")" \
    --argjson psi_io "$(pressure_pct "$piA" "$piB" "$tA_us" "$tB_us")" \
    --argjson threads "$(threads_json "$D/threads.tsv")" \
    --arg load0 "$load0" --argjson overlap "$overlap" --argjson exit "$SYSTEM_EXIT" \
    --argjson av_n "${av_n:-0}" --argjson aa_n "${aa_n:-0}" --arg av_last "${av_last:-}" --arg aa_last "${aa_last:-}" \
    --argjson max_id "$max_id" \
    --rawfile ev "$D/events.tsv" --rawfile cps "$D/cpu-per-second.tsv" --rawfile prog "$D/pgbench-progress.tsv" '
    def pe($c): if $c == null or $events == 0 then null else ($c / $events * 1e7 | round / 10) end;
    ($ev | split("\n") | map(select(length > 0) | split("\t") | {t_ms: (.[0] | tonumber), source: .[1], text: .[2]})) as $events_all
    | ($cps | split("\n") | map(select(length > 0) | split("\t") | map(tonumber)
        | {t_ms: .[0], system_pct: .[1], walsender_pct: .[2], broker_pct: .[3], host_busy_pct: .[4], cpu_pressure_pct: .[5]})) as $cpu
    | ($prog | split("\n") | map(select(length > 0) | split("\t") | map(tonumber? // null)
        | {t_ms: .[0], tps: .[1], commit_latency_ms: .[2], schedule_lag_ms: .[3]})) as $progress
    | $lat[0] as $l
    | {system: $system, rate: $rate, topic: $topic, run_dir: $dir, connector: (if $connector == "" then null else $connector end),
       settings: $tuning, started_utc: $t0, loadavg_at_start: $load0, throughput_bench_seconds: $overlap,
       pgbench: $pgb[0],
       rows_inserted: ($rows - 1), records: ($records), verified: ($records == $rows - 1 and $l.distinct_ids == $rows - 1 and $l.duplicate_ids == 0 and $l.max_id == $max_id),
       warmup_seconds: $warmup, warmup_records: $l.warmup_records, warmup_max_ms: $l.warmup_max_ms,
       measured_records: $l.measured_records, latency_ms: $l.latency_ms,
       commit_to_connector_ms: $l.commit_to_connector_ms, connector_to_append_ms: $l.connector_to_append_ms,
       burst_threshold_ms: $l.burst_threshold_ms, records_over_threshold: $l.records_over_threshold,
       seconds_measured: $l.seconds_measured,
       bursts: [$l.bursts[] | . as $b
         | ($b.epoch_s * 1000) as $s
         | ($b.worst_append_utc | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601 * 1000
            + ($b.worst_append_utc | capture("\\.(?<f>[0-9]{3})").f | tonumber)) as $wa
         | $b + {cpu_pct: [$cpu[] | select(.t_ms > $s and .t_ms <= $s + 2000)],
                 pgbench: [$progress[] | select(.t_ms > $s and .t_ms <= $s + 2000)],
                 events: [$events_all[] | select(.t_ms >= $s - 1000 and .t_ms <= $wa + 200)]}],
       kafka: {avg_key_bytes: $l.avg_key_bytes, avg_value_bytes: $l.avg_value_bytes,
               record_batches: $l.record_batches, record_batches_measured: $l.record_batches_measured,
               records_per_batch_measured: (if ($l.record_batches_measured // 0) > 0 then ($l.records_in_measured_batches / $l.record_batches_measured * 10 | round / 10) else null end),
               segments: $l.segments},
       steady_phase: {seconds: $steady_s, events: $events,
                      system_cpu_s: $sys_cpu, system_cpu_us_per_event: pe($sys_cpu),
                      walsender_cpu_s: $ws_cpu, walsender_cpu_us_per_event: pe($ws_cpu),
                      broker_cpu_s: $br_cpu, broker_cpu_us_per_event: pe($br_cpu),
                      runqueue_wait_s: {system: $sys_wait, walsender: $ws_wait, broker: $br_wait},
                      load_generator_cpu_s: $load_cpu, load_generator_cpu_us_per_event: pe($load_cpu),
                      load_generator: "pgbench and the \($n_backends) backends serving it",
                      host_busy_cpu_s: $host_s, other_processes_cpu_s: $other_s,
                      cpu_pressure_some_pct: $psi_cpu, io_pressure_some_pct: $psi_io,
                      system_threads: $threads},
       postgres: {autovacuum_count: $av_n, autoanalyze_count: $aa_n,
                  last_autovacuum: (if $av_last == "" then null else $av_last end),
                  last_autoanalyze: (if $aa_last == "" then null else $aa_last end)},
       gc_pauses: ([$events_all[] | select(.source | test("gc$"))] | group_by(.source) | map({(.[0].source): {count: length,
                    max_ms: (map(.text | capture("(?<ms>[0-9.]+)ms$").ms | tonumber) | max)}}) | add),
       system_exit_code: $exit}' >"$D/run.json"
  jq -r '"[\(.rate)/s \(.system)] pgbench \(.pgbench.achieved_tps | floor) tx/s; \(.records) records (verified: \(.verified)); latency ms p50 \(.latency_ms.p50) p90 \(.latency_ms.p90) p99 \(.latency_ms.p99) p99.9 \(.latency_ms.p99_9) max \(.latency_ms.max); \(.bursts | length) bursts"' "$D/run.json" \
    | while read -r line; do log "$line"; done
  [ "$(jq -r .verified "$D/run.json")" = true ] \
    || die "[$TAG] the topic's records are not the rows inserted: $records records for $(( rows - 1 )) rows (see $D/latency.json)"
}

# A cheap liveness check for the load loop (no REST call).
system_alive_cheap() { kill -0 "$SYSTEM_PID" 2>/dev/null; }

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

T_START=$(now)
CONNECT_START_S=null
if host_was_busy "$LOADAVG_START"; then
  log "WARNING: load average was $LOADAVG_START at start on $(nproc) cpus: other work competes for the cpus, figures are pessimistic"
fi
# pgcdc first, then the Debezium variants, so that the Connect worker runs only for those.
MAX_RATE=0
for r in "${RATES[@]}"; do [ "$r" -le "$MAX_RATE" ] || MAX_RATE=$r; done
ORDERED=()
for s in "${SYSTEMS[@]}"; do [ "$s" != pgcdc ] || ORDERED+=("$s"); done
for s in "${SYSTEMS[@]}"; do [ "$s" = pgcdc ] || ORDERED+=("$s"); done
for s in "${ORDERED[@]}"; do
  if [ "$s" != pgcdc ] && [ -z "$CONNECT_PID" ]; then
    wait_quiet
    start_connect
    # A fresh JVM interprets and compiles Debezium's code during its first minute: warm it up
    # (not measured) at the highest rate before its first measured run.
    [ "$JVM_WARMUP" = 0 ] || run_one "$s" "${MAX_RATE}" warm
  fi
  for r in "${RATES[@]}"; do run_one "$s" "$r"; done
done
stop_connect
TOTAL_S=$(fsub "$(now)" "$T_START")

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

GIT_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
GIT_DIRTY=$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null | wc -l | tr -d ' ')
BIN_MTIME=$(date -u -r "$PGCDC" +%Y-%m-%dT%H:%M:%SZ)
LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg)
JAVA_VERSION=$(java -version 2>&1 | head -n 1)
CONNECT_VERSION=null
[ "$NEED_DBZ" = 0 ] || CONNECT_VERSION=$(find "$CONNECT_LIB" -name 'connect-runtime-*.jar' -printf '%f\n' | sed -n 's/^connect-runtime-\(.*\)\.jar$/\1/p' | head -n 1)
BUSY=false; ! host_was_busy "$LOADAVG_START" || BUSY=true
jq -n --arg date "$STAMP" --arg run_dir "$RUN" --argjson total_s "$TOTAL_S" \
  --arg commit "$GIT_COMMIT" --argjson dirty "$GIT_DIRTY" --arg bin "$PGCDC" --arg bin_mtime "$BIN_MTIME" \
  --argjson cpus "$(nproc)" --arg load0 "$LOADAVG_START" --arg load1 "$LOADAVG_END" --argjson busy "$BUSY" \
  --arg dbz_version "$DBZ_VERSION" --arg connect_version "$CONNECT_VERSION" --arg java "$JAVA_VERSION" \
  --arg heap "${CONNECT_HEAP[*]}" --argjson connect_start "$CONNECT_START_S" \
  --arg pgcdc_extra "$EXTRA_SET" --arg dbz_extra "$DBZ_EXTRA_SET" --arg kafka "$KAFKA" --arg ssl "$SSLMODE" \
  --arg pg_version "$PG_VERSION" --argjson poll "$DBZ_POLL_MS" --argjson flush "$DBZ_OFFSET_FLUSH_MS" \
  --argjson seconds "$RUN_SECONDS" --argjson warmup "$WARMUP" --argjson burst "$BURST_MS" \
  --arg sync "$SYNC_COMMIT" --argjson clients "$CLIENTS" --argjson threads "$THREADS" --argjson tx_rows "$TX_ROWS" \
  --arg pgcdc_log "$PGCDC_LOG" --argjson jvm_warmup "$JVM_WARMUP" --arg batch "$DBZ_BATCH_BYTES" \
  --slurpfile runs <(for s in "${ORDERED[@]}"; do for r in "${RATES[@]}"; do cat "$RUN/$r-$s/run.json"; done; done) '
{
  bench: "latency", date: $date, run_dir: $run_dir, total_seconds: $total_s,
  host: {cpus: $cpus, loadavg_at_start: $load0, loadavg_at_end: $load1, busy_at_start: $busy},
  workload: {table: "public.t(id bigserial pk, n int, label text, created_at timestamptz)",
             transaction: "one INSERT of \($tx_rows) row(s) (pgbench -M prepared)", rows_per_transaction: $tx_rows, seconds_per_run: $seconds,
             warmup_seconds: $warmup, pgbench_clients: $clients, pgbench_threads: $threads,
             synchronous_commit: $sync, postgresql: $pg_version, pg_sslmode: $ssl},
  measure: {latency: "record LogAppendTime (broker clock, ms) - source.ts_us (commit time, us); topic created with message.timestamp.type=LogAppendTime, 1 partition",
            percentiles: "nearest rank, over records committed after the warm-up",
            burst: ("one-second window (by commit time) whose max latency exceeds \($burst) ms"),
            cpu: "utime+stime growth between the end of the warm-up and the end of pgbench, per event committed in that interval"},
  kafka: {bootstrap: $kafka, converter: "JsonConverter, schemas.enable=true (key and value)"},
  pgcdc: {binary: $bin, git_commit: $commit, uncommitted_source_files: $dirty, binary_mtime: $bin_mtime,
          settings: "defaults; set: connection, slot.name, publication.name (autocreate disabled), topic.prefix, snapshot.mode=no_data, offset file",
          extra_set: $pgcdc_extra, log_filter: $pgcdc_log},
  debezium: {connector: ("debezium-connector-postgres " + $dbz_version), kafka_connect: $connect_version,
             worker: {mode: "standalone", rest_port: 58283, jvm: $java, heap: $heap, start_seconds: $connect_start,
                      "offset.flush.interval.ms": $flush, "connector.client.config.override.policy": "All",
                      producer_set_by_connect: {acks: "all", "max.in.flight.requests.per.connection": "1", "linger.ms (client default)": "5"}},
             jvm_warmup_seconds: $jvm_warmup,
             tuned: {"poll.interval.ms": $poll, "producer.override.linger.ms": "0", "producer.override.batch.size": $batch},
             default: {"poll.interval.ms": "500 (default)", "linger.ms": "5 (Kafka 4 client default)", "batch.size": "16384 (client default)"},
             extra_set: $dbz_extra},
  runs: $runs
}' >"$JSON"

print_summary "$JSON"
