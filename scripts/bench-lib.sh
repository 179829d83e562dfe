# shellcheck shell=bash disable=SC2034  # (variables set here are read by the sourcing scripts)
# Helpers shared by scripts/bench.sh and scripts/bench-compare.sh; sourced, never run.
#
# The caller defines log and die, and sets (before calling what needs them):
#   ROOT       the repository
#   RUN        the run's directory (logs, apt log, build log)
#   OUT        target/bench (the topic-deletion log)
#   KAFKA      bootstrap servers of the bench broker;  KAFKA_LIB  its jars (topic deletion)
#   CONN_BASE  libpq connection string without dbname;  BENCH_APP  application_name of q
#   PGCDC      the pgcdc binary;  NO_BUILD  1: never build it

# ---------------------------------------------------------------------------------------------
# Clock and numbers
# ---------------------------------------------------------------------------------------------

# Clock in seconds with microseconds, and float helpers.
now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
fdiv() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else printf "null" }'; }
fratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else printf "null" }'; }
kib_to_mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# A JSON number, or null when the value is empty/not numeric.
jnum() { if [[ "${1:-}" =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; then printf '%s' "$1"; else printf 'null'; fi; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

# ---------------------------------------------------------------------------------------------
# Prerequisites, services, build
# ---------------------------------------------------------------------------------------------

need_pkg() { # command package
  command -v "$1" >/dev/null 2>&1 && return 0
  { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; } \
    || die "missing command $1 (install the Debian package $2)"
  log "installing $2 with apt-get (log: $RUN/apt.log)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >>"$RUN/apt.log" 2>&1 \
    || { apt-get update -q >>"$RUN/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >>"$RUN/apt.log" 2>&1; } \
    || die "apt-get install $2 failed, see $RUN/apt.log"
}

# The clients every bench uses: psql, pg_recvlogical, kcat, jq and GNU time.
bench_tools() {
  local time_out
  need_pkg psql postgresql-client
  need_pkg pg_recvlogical postgresql-client
  need_pkg kcat kcat
  need_pkg jq jq
  [ -x /usr/bin/time ] || need_pkg /usr/bin/time time
  # (No "| grep -q" under pipefail: grep exiting at the first match can SIGPIPE the writer.)
  time_out=$(/usr/bin/time -v true 2>&1 || true)
  [[ "$time_out" == *"Maximum resident set size"* ]] || die "/usr/bin/time is not GNU time (apt-get install time)"
}

# bench_services start|running: starts pg and kafka (not "start all", which would also (re)start
# or SIGCONT the fault-test broker that tests stop on purpose), then reads their addresses into
# PG_HOST, PG_PORT, PG_USER, PGPASSWORD (exported) and KAFKA.
bench_services() {
  if [ "$1" = start ]; then
    "$ROOT/scripts/services.sh" start pg
    "$ROOT/scripts/services.sh" start kafka
  fi
  eval "$("$ROOT/scripts/services.sh" env)"
  PG_HOST=$PGCDC_TEST_PG_HOST
  PG_PORT=$PGCDC_TEST_PG_PORT
  PG_USER=$PGCDC_TEST_PG_SUPERUSER
  export PGPASSWORD=$PGCDC_TEST_PG_PASSWORD
  KAFKA=$PGCDC_TEST_KAFKA
  REGISTRY=$PGCDC_TEST_REGISTRY
}

# Builds $PGCDC (cargo build --release --bin pgcdc) when it is missing or older than the sources,
# unless NO_BUILD=1.
bench_build() {
  local stale=""
  if [ "$NO_BUILD" != 1 ]; then
    if [ ! -x "$PGCDC" ]; then
      stale="missing"
    else
      stale=$(cd "$ROOT" || exit 0; find src Cargo.toml Cargo.lock -newer "$PGCDC" -print -quit 2>/dev/null) || true
    fi
    if [ -n "$stale" ]; then
      [ "$stale" = missing ] || stale="older than $stale"
      log "cargo build --release --bin pgcdc (binary $stale; log: $RUN/build.log)"
      (cd "$ROOT" && cargo build --release --bin pgcdc) >"$RUN/build.log" 2>&1 \
        || { tail -n 30 "$RUN/build.log" >&2; die "cargo build --release --bin pgcdc failed (log: $RUN/build.log)"; }
    fi
  fi
  [ -x "$PGCDC" ] || die "$PGCDC is missing (BENCH_NO_BUILD=1 was set?)"
}

# Deletes the topics whose whole name matches regex $1 (kcat cannot): bench/DeleteTopics.java,
# run as a single-file program by the JDK with the broker's own jars. Prints what it deleted.
delete_topics() {
  local lib="$KAFKA_LIB" deleted
  if ! command -v java >/dev/null 2>&1 || [ ! -d "$lib" ]; then
    log "WARNING: cannot delete Kafka topics (needs java and $lib); they stay"
    return 0
  fi
  if deleted=$(timeout 180 java -Xmx256m -cp "$lib/*" "$ROOT/bench/DeleteTopics.java" "$KAFKA" "$1" \
                 2>>"$OUT/delete-topics.log"); then
    [ -z "$deleted" ] || log "deleted Kafka topic(s): $(tr '\n' ' ' <<<"$deleted")"
  else
    log "WARNING: deleting Kafka topics matching $1 failed (log: $OUT/delete-topics.log)"
  fi
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------

# psql on database $1, unaligned tuples only, stop at the first error.
q() { local db=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 "$CONN_BASE dbname=$db application_name=$BENCH_APP" "$@"; }

# drop_bench_objects DB PUBLICATION SLOT...: drops the slots (first: a database with logical
# slots cannot be dropped; waits for their walsenders to go, terminates them after 60 s), then
# the publication and the database.
drop_bench_objects() {
  local db=$1 pub=$2 deadline left terminated=0 list
  shift 2
  list=$(printf "'%s', " "$@"); list=${list%, }
  deadline=$(( $(date +%s) + 60 ))
  while :; do
    left=$(q postgres -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name IN ($list)" 2>/dev/null || echo error)
    [ "$left" = 0 ] && break
    q postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name IN ($list) AND NOT active" >/dev/null 2>&1 || true
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "slots still present after 60s; terminating their walsenders"
      q postgres -c "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name IN ($list) AND active" >/dev/null 2>&1 || true
      deadline=$(( $(date +%s) + 30 ))
      [ "$terminated" = 1 ] && { log "WARNING: could not drop slots $(tr ' ' / <<<"$*")"; return 0; }
      terminated=1
    fi
    sleep 0.2
  done
  if [ -n "$(q postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'" 2>/dev/null || true)" ]; then
    q "$db" -c "DROP PUBLICATION IF EXISTS $pub" >/dev/null 2>&1 || true
    q postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null \
      || log "WARNING: could not drop database $db"
  fi
}

# What a load script prints so that load_end_lsn can find the exact end LSN: XID_MARKER_SQL
# inside the last transaction (before its COMMIT), END_MARKER_SQL after it. The session runs
# with synchronous_commit = on for the last commit, so that it is flushed.
XID_MARKER_SQL="SELECT 'xid ' || pg_current_xact_id() || ' ' || pg_current_wal_insert_lsn();"
END_MARKER_SQL="SELECT 'end ' || pg_current_wal_lsn() || ' ' || pg_current_wal_flush_lsn();"

# load_end_lsn DB LOAD_OUTPUT: sets END_LSN (the exact end of the last load transaction's
# commit record, found with pg_walinspect: pgoutput's Commit end_lsn, where pg_recvlogical
# --endpos stops and what a consumer confirms once everything is delivered), END_WAL_LSN
# (pg_current_wal_lsn after the load), END_FLUSH_LSN and LAST_XID.
load_end_lsn() {
  local db=$1 out=$2 xid8 before
  read -r _ xid8 before < <(grep '^xid ' "$out")
  read -r _ END_WAL_LSN END_FLUSH_LSN < <(grep '^end ' "$out")
  LAST_XID=$(( xid8 % 4294967296 ))
  END_LSN=$(q "$db" -c "SELECT end_lsn FROM pg_get_wal_records_info('$before', '$END_FLUSH_LSN')
                        WHERE resource_manager = 'Transaction' AND record_type LIKE 'COMMIT%' AND xid = '$LAST_XID'::xid")
  [ -n "$END_LSN" ] || die "could not find the commit record of xid $LAST_XID between $before and $END_FLUSH_LSN"
}

# start_slot_waiter DB SLOT END_LSN TIMEOUT APP FILES: one server-side loop that polls the slot
# every 20 ms and prints the server clock (epoch seconds) to FILES.out when confirmed_flush_lsn
# reaches END_LSN. Returns once it is connected and polling, so its own start-up is not timed,
# and it costs no process spawns while the consumer runs. Sets WAITER_PID.
start_slot_waiter() {
  local db=$1 slot=$2 end_lsn=$3 timeout=$4 app=$5 files=$6 deadline
  cat >"$files.sql" <<SQL
DO \$\$
DECLARE deadline timestamptz := clock_timestamp() + interval '$timeout seconds';
BEGIN
  LOOP
    EXIT WHEN (SELECT confirmed_flush_lsn FROM pg_replication_slots
               WHERE slot_name = '$slot') >= '$end_lsn'::pg_lsn;
    IF clock_timestamp() > deadline THEN
      RAISE EXCEPTION 'slot $slot did not reach $end_lsn within $timeout s';
    END IF;
    PERFORM pg_sleep(0.02);
  END LOOP;
END
\$\$;
SELECT to_char(extract(epoch FROM clock_timestamp()), 'FM9999999999.999999');
SQL
  psql -X -q -At -v ON_ERROR_STOP=1 "$CONN_BASE dbname=$db application_name=$app" \
    -f "$files.sql" >"$files.out" 2>"$files.err" </dev/null &
  WAITER_PID=$!
  deadline=$(( $(date +%s) + 30 ))
  until [ -n "$(q postgres -c "SELECT 1 FROM pg_stat_activity WHERE application_name = '$app' AND datname = '$db' AND state = 'active'")" ]; do
    kill -0 "$WAITER_PID" 2>/dev/null || { cat "$files.err" >&2; die "waiter could not connect"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "waiter not polling within 30s"
    sleep 0.05
  done
}

# ---------------------------------------------------------------------------------------------
# CPU, memory, threads (/proc)
# ---------------------------------------------------------------------------------------------

CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { # pid (or pid/task/tid) -> utime+stime in ticks (fields 14, 15 after the parenthesised comm)
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  s=${s##*) }
  awk '{ print $12 + $13 }' <<<"$s"
}
ticks_to_s() { awk -v t="$1" -v h="$CLK_TCK" 'BEGIN { printf "%.2f", t / h }'; }
host_cpu() { awk '/^cpu / { print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6 }' /proc/stat; }   # total idle+iowait
# Busy cpu-seconds of the whole host between two host_cpu readings (all cpus together).
host_busy_s() { ticks_to_s $(( ($3 - $4) - ($1 - $2) )); }
# Nanoseconds all threads of a process spent runnable but waiting for a cpu (schedstat).
runq_wait_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ w += $2 } END { printf "%.0f\n", w }'; }
ns_to_s() { awk -v n="$1" 'BEGIN { printf "%.2f", n / 1e9 }'; }
time_field() { # GNU time -v output file, "label" -> value after ": "
  awk -F': ' -v k="$2" 'index($0, k) { print $2; exit }' "$1" | tr -d ' \t'
}
vm_field() { # pid field (VmHWM, VmRSS) -> MiB
  awk -v f="$2:" '$1 == f { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null
}

# thread_stats PID: one line per live thread: tid, name (comm), cpu ticks, ns spent runnable
# but waiting for a cpu (schedstat).
thread_stats() {
  local task comm wait_ns
  for task in /proc/"$1"/task/*; do
    comm=$(cat "$task/comm" 2>/dev/null) || continue
    read -r _ wait_ns _ <"$task/schedstat" 2>/dev/null || wait_ns=0
    printf '%s\t%s\t%s\t%s\n' "${task##*/}" "$comm" "$(cpu_ticks "${task#/proc/}")" "$wait_ns"
  done
}

# threads_summary AFTER [BEFORE]: thread_stats files -> per thread name, busiest first: name,
# threads, cpu seconds, seconds waiting for a cpu; with BEFORE, the growth since then (a thread
# absent from BEFORE counts from zero).
threads_summary() {
  awk -F'\t' -v h="$CLK_TCK" -v before="${2:-}" '
    FILENAME == before { c0[$1] = $3; w0[$1] = $4; next }
    { s[$2] += $3 - c0[$1]; w[$2] += $4 - w0[$1]; n[$2]++ }
    END { for (k in s) printf "%s\t%d\t%.2f\t%.2f\n", k, n[k], s[k] / h, w[k] / 1e9 }' \
    ${2:+"$2"} "$1" | sort -t$'\t' -k3,3 -rn
}

# A threads_summary file as a JSON array.
threads_json() {
  jq -R -s 'split("\n") | map(select(length > 0) | split("\t")
    | {name: .[0], threads: (.[1] | tonumber), cpu_s: (.[2] | tonumber),
       runqueue_wait_s: (.[3] | tonumber)})' "$1"
}

# ---------------------------------------------------------------------------------------------
# Kafka and the host
# ---------------------------------------------------------------------------------------------

# watermark_records TOPIC...: records in the topics of $KAFKA = sum over topics and partitions of
# (high - low watermark); "error" when a topic has no partitions (does not exist).
watermark_records() {
  local t parts p hi lo total=0
  for t in "$@"; do
    parts=$(kcat -L -b "$KAFKA" -t "$t" -J -m 10 | jq -r '.topics[0].partitions[].partition')
    [ -n "$parts" ] || { echo "error"; return; }
    for p in $parts; do
      hi=$(kcat -Q -b "$KAFKA" -t "$t:$p:-1" -m 10 | awk '{ print $NF }')
      lo=$(kcat -Q -b "$KAFKA" -t "$t:$p:-2" -m 10 | awk '{ print $NF }')
      total=$(( total + hi - lo ))
    done
  done
  echo "$total"
}

# host_was_busy "LOADAVG": true when the 1-minute load average exceeded half the cpus.
host_was_busy() { awk -v l="${1%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; }

# Text of a log file without ANSI colour codes.
strip_ansi() { sed 's/\x1b\[[0-9;]*m//g' "$@"; }

# start_pgcdc DIR CONFIG [ARG...]: starts $PGCDC run --config CONFIG [ARG...] in the background
# under GNU time (DIR/pgcdc.time), output in DIR/pgcdc.stdout and DIR/pgcdc.log; sets TIME_PID
# (the time process, a child of this shell) and PGCDC_PID (pgcdc itself, empty if it exited at
# once). Dies when pgcdc has not started within 10 s.
start_pgcdc() {
  local dir=$1 config=$2 deadline
  shift 2
  # /usr/bin/time -> bash (writes its pid, then execs pgcdc): the pid file holds pgcdc's pid.
  # shellcheck disable=SC2016
  /usr/bin/time -v -o "$dir/pgcdc.time" \
    bash -c 'echo $$ >"$0"; exec "$@"' "$dir/pgcdc.pid" \
    "$PGCDC" run --config "$config" "$@" \
    </dev/null >"$dir/pgcdc.stdout" 2>"$dir/pgcdc.log" &
  TIME_PID=$!
  deadline=$(( $(date +%s) + 10 ))
  until [ -s "$dir/pgcdc.pid" ]; do
    kill -0 "$TIME_PID" 2>/dev/null || break
    [ "$(date +%s)" -lt "$deadline" ] || die "pgcdc did not start within 10s"
    sleep 0.01
  done
  PGCDC_PID=$(cat "$dir/pgcdc.pid" 2>/dev/null || true)
}

# stop_pgcdc: SIGTERM to the pgcdc that start_pgcdc started, SIGKILL after 60 s; sets
# PGCDC_RC to its exit status (GNU time passes it on) and clears TIME_PID and PGCDC_PID.
stop_pgcdc() {
  local deadline
  kill -TERM "$PGCDC_PID"
  deadline=$(( $(date +%s) + 60 ))
  while kill -0 "$TIME_PID" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "pgcdc did not stop within 60s of SIGTERM; sending SIGKILL"
      kill -KILL "$PGCDC_PID" 2>/dev/null || true
      break
    fi
    sleep 0.05
  done
  PGCDC_RC=0; wait "$TIME_PID" || PGCDC_RC=$?
  TIME_PID=""; PGCDC_PID=""
}

# ---------------------------------------------------------------------------------------------
# Shared by bench-compare.sh and bench-snapshot.sh (their globals: KAFKA_PID, KAFKA, KAFKA_LIB,
# CLASSES, ROWS, RUN_TIMEOUT, CONNECT_PID)
# ---------------------------------------------------------------------------------------------

# Stops a background process of ours (SIGTERM, SIGKILL after $2 seconds), if it is still there.
stop_bg() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && stop_pid "$1" "$2" "$3"; return 0; }
broker_ticks() { if [ -n "$KAFKA_PID" ]; then cpu_ticks "$KAFKA_PID"; else echo 0; fi; }
broker_cpu_s() { if [ -n "$KAFKA_PID" ]; then ticks_to_s $(( $(broker_ticks) - $1 )); else echo null; fi; }
# key value ... -> a JSON object; numbers become numbers, "" and null null, true/false booleans.
mkjson() {
  jq -n '[$ARGS.positional | _nwise(2) | {(.[0]): (.[1]
    | if test("^-?[0-9]+(\\.[0-9]+)?$") then tonumber elif . == "" or . == "null" then null
      elif . == "true" then true elif . == "false" then false else . end)}] | add // {}' --args "$@"
}
# start_record_waiter TOPIC FILES: bench/WaitRecords polls the topic's watermarks every 50 ms
# until it holds ROWS records (FILES.out: ready/first/done lines with epoch times). Returns once
# it is connected, so its start-up is not timed. Sets WR_PID.
start_record_waiter() {
  local topic=$1 files=$2 deadline
  java -Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -cp "$CLASSES:$KAFKA_LIB/*" \
    WaitRecords "$KAFKA" "$ROWS" "$RUN_TIMEOUT" "$topic" >"$files.out" 2>"$files.err" </dev/null &
  WR_PID=$!
  deadline=$(( $(date +%s) + 60 ))
  until grep -q '^ready ' "$files.out" 2>/dev/null; do
    kill -0 "$WR_PID" 2>/dev/null || { cat "$files.err" >&2; die "WaitRecords exited during start-up"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "WaitRecords not connected within 60s (log: $files.err)"
    sleep 0.05
  done
}
# wr_time FILES first|done: the epoch time WaitRecords printed for that event (empty if none).
wr_time() { awk -v k="$2" '$1 == k { print $2; exit }' "$1.out"; }
# Background: fails when the connector or its task is FAILED or the worker is gone.
dbz_watchdog() {
  local st
  while :; do
    kill -0 "$CONNECT_PID" 2>/dev/null || { echo "the Connect worker exited"; return 1; }
    st=$(rest "/connectors/$1/status" 2>/dev/null || true)
    case "$st" in *'"state":"FAILED"'*) printf 'connector FAILED: %s\n' "$st" | sed 's/\\n/\n/g' | head -n 40; return 1 ;; esac
    sleep 1
  done
}

# What a bench with Debezium needs before its first run: the tools, the Connect worker and the
# Debezium plugin (scripts/debezium/setup.sh), pgcdc's build, bench/WaitRecords compiled; sets
# DBZ_VERSION and KAFKA_PID (empty, with a warning, when the broker's pid is unknown).
debezium_bench_setup() {
  bench_tools
  need_pkg curl curl
  command -v javac >/dev/null 2>&1 || die "missing javac (a JDK 17+)"
  [ -d "$KAFKA_LIB" ] || die "no broker jars in $KAFKA_LIB (scripts/services.sh start kafka fills it)"
  "$ROOT/scripts/debezium/setup.sh" 2>&1 | sed 's/^/  /' >&2
  DBZ_VERSION=$(cut -d: -f2 "$PLUGINS/.complete")
  bench_build
  if [ ! -f "$CLASSES/WaitRecords.class" ] || [ "$ROOT/bench/WaitRecords.java" -nt "$CLASSES/WaitRecords.class" ]; then
    mkdir -p "$CLASSES"
    javac -cp "$KAFKA_LIB/*" -d "$CLASSES" "$ROOT/bench/WaitRecords.java" 2>"$RUN/javac.log" \
      || { cat "$RUN/javac.log" >&2; die "javac bench/WaitRecords.java failed"; }
  fi
  KAFKA_PID=$("$ROOT/scripts/services.sh" kafka-pid kafka 2>/dev/null || true)
  [ -n "$KAFKA_PID" ] || log "WARNING: the broker's pid is unknown (services from another checkout?): no broker cpu figures"
}
