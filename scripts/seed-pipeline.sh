#!/usr/bin/env bash
# The seed's whole pipeline, end to end and exactly once (examples/pedidos/): an application
# writes orders and their outbox events in one transaction each; pgcdc (exactly-once, offsets in
# Kafka) routes the events to pedidos.criados keyed by client; two instances of the seed's Kafka
# Streams application (exactly_once_v2, one standby replica) sum the revenue per client in
# 5-minute event-time windows into pedidos.receita-5min. The script kills pgcdc, a Streams
# instance, and both at once while the orders arrive, then checks:
#   1. pedidos.criados holds every order exactly once (read_committed);
#   2. the revenue per client and window equals the SQL sum over the pedidos table, within a cent;
#   3. the standby's takeover (records restored, time) after an instance was killed;
#   4. a replay (a new application.id from the start of the topic, no standby) gives the same
#      revenue; its instance is killed and a new one rebuilds the state from the changelog
#      (records, time), and more orders then give the right sums in both applications;
#   5. the seed's exercise: orders at H:02 and H:04, then one at (H-1):59: with 1 minute of grace
#      the late one is dropped and counted in dropped-records-total; with 10 minutes it counts;
#   and that the bucket the S3 sink writes (examples/pedidos/s3/) holds every order once, its
#   Connect worker killed with the third kill.
# It ends with one line per check. Starts what it needs (scripts/services.sh pg, kafka), builds
# pgcdc (cargo build) and the Streams application (mvn package). Its database (loja_pipeline),
# slot and topics are its own; a new run deletes the previous run's.
#
# Usage: scripts/seed-pipeline.sh [--short]
#   --short   fewer orders (CI): 3,000 orders at 60/s instead of 12,000 at 200/s
# Environment: SEED_ORDERS, SEED_CLIENTS (50), SEED_RATE (orders/s), SEED_TIMEOUT (s, 180)
# Output: the check lines on stdout and in target/seed-pipeline/results.txt; logs of every
# process in target/seed-pipeline/. Exit 0 when every check passed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

ORDERS=${SEED_ORDERS:-12000} RATE=${SEED_RATE:-200}
[ "${1:-}" = --short ] && ORDERS=${SEED_ORDERS:-3000} RATE=${SEED_RATE:-60}
CLIENTS=${SEED_CLIENTS:-50}
TIMEOUT=${SEED_TIMEOUT:-180}
DIR=$ROOT/target/seed-pipeline
EX=$ROOT/examples/pedidos
DB=loja_pipeline
SLOT=pedidos_pipeline
T0=$(date +%s.%N)
results=()

log() { printf 'seed: [%5.1fs] %s\n' "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$*" >&2; }
die() { printf 'seed: ERROR: %s\n' "$*" >&2; exit 1; }
result() { results+=("$*"); log "$*"; }

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s until it succeeds.
wait_for() {
  local secs=$1 what=$2; shift 2
  local deadline=$(($(date +%s) + secs))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${secs}s waiting for $what"
    sleep 0.2
  done
}

# ------------------------------------------------------------------------------ services, builds
log "services and builds"
scripts/services.sh start pg
scripts/services.sh start kafka
eval "$(scripts/services.sh env)"
export PGHOST=$PGCDC_TEST_PG_HOST PGPORT=$PGCDC_TEST_PG_PORT PGUSER=$PGCDC_TEST_PG_SUPERUSER
export PGPASSWORD=$PGCDC_TEST_PG_PASSWORD PGOPTIONS="-c client_min_messages=warning" PGDATABASE=$DB
KAFKA=$PGCDC_TEST_KAFKA
cargo build --quiet --bin pgcdc
PGCDC=$ROOT/target/debug/pgcdc
(cd "$EX/streams" && mvn -q -B --no-transfer-progress -Dstyle.color=never package) >&2 \
  || die "building examples/pedidos/streams failed (mvn package)"
CP="$EX/streams/target/classes:$EX/streams/target/dependency/*"
"$EX/s3/setup.sh"
java_tool() { java -Xmx128m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CP" "$@"; }

# ------------------------------------------------------------------------------ processes
# start NAME COMMAND...: runs COMMAND in the background, output appended to $DIR/NAME.log, its
# pid in $DIR/NAME.pid.
start() {
  local name=$1; shift
  "$@" >>"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
}
pid_of() { cat "$DIR/$1.pid"; }
# ours PID: PID is alive and one of this script's processes (a pid is reused once it exited).
ours() {
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qE 'loja\.pedidos|pgcdc run|write-orders|ConnectDistributed'
}
# signal SIG PIDFILE: sends SIG to the process of PIDFILE if it is still ours, and waits for it.
signal() {
  local p
  p=$(cat "$2" 2>/dev/null) || return 0
  if ours "$p"; then
    kill "-$1" "$p" 2>/dev/null || true
    while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
  fi
}
kill9() { signal KILL "$DIR/$1.pid"; }
stop_all() {
  local f
  for f in "$DIR"/*.pid; do [ -f "$f" ] && signal TERM "$f"; done
  "$EX/s3/stop.sh" >/dev/null 2>&1 || true
}
trap stop_all EXIT
lines() { wc -l <"$DIR/$1.log"; }

start_pgcdc() {
  local before=0
  [ -f "$DIR/pgcdc.log" ] && before=$(grep -c "streaming started" "$DIR/pgcdc.log" || true)
  start pgcdc env PGCDC_LOG=info "$PGCDC" run --config "$EX/pedidos-cdc.json" \
    --set database.hostname="$PGHOST" --set database.port="$PGPORT" --set database.user="$PGUSER" \
    --set database.password="$PGPASSWORD" --set database.dbname=$DB --set slot.name=$SLOT \
    --set topic.prefix=pipeline --set bootstrap.servers="$KAFKA" --listeners http://127.0.0.1:0
  wait_for 60 "pgcdc to stream" pgcdc_streaming "$before"
}
# pgcdc_streaming N: pgcdc's log has more than N "streaming started" lines; dies if pgcdc exited.
pgcdc_streaming() {
  [ "$(grep -c 'streaming started' "$DIR/pgcdc.log")" -gt "$1" ] && return 0
  kill -0 "$(pid_of pgcdc)" 2>/dev/null && return 1
  tail -n 20 "$DIR/pgcdc.log" >&2
  die "pgcdc exited (log: $DIR/pgcdc.log)"
}

# start_streams NAME APPLICATION_ID STANDBYS INPUT OUTPUT GRACE_MINUTES
start_streams() {
  start "$1" env INSTANCE="$1" APPLICATION_ID="$2" STANDBY_REPLICAS="$3" INPUT_TOPIC="$4" \
    OUTPUT_TOPIC="$5" GRACE_MINUTES="$6" STATE_DIR="$DIR/state-$1" KAFKA_BOOTSTRAP="$KAFKA" \
    java -Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CP" loja.pedidos.PedidosAgregador
}
# running NAME...: each of these instances has been RUNNING.
running() {
  local n
  for n in "$@"; do grep -qE -- "-> RUNNING" "$DIR/$n.log" || return 1; done
}
# all_active NAME LINE: NAME's latest RUNNING line after LINE lists all four tasks as active.
all_active() {
  tail -n +"$(($2 + 1))" "$DIR/$1.log" | grep -- "-> RUNNING" | tail -n 1 \
    | grep -q 'active tasks \[0_0,0_1,0_2,0_3\]'
}
# at NAME LINE PATTERN: the time (epoch seconds) of the first line after LINE matching PATTERN.
at() {
  date -d "$(tail -n +"$(($2 + 1))" "$DIR/$1.log" | grep -m1 -E -- "$3" | cut -d' ' -f1)" +%s.%N
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# takeover NAME LINE KILLED_AT: when NAME noticed the kill (it rebalanced) and when it ran all
# four tasks, from the kill.
takeover() {
  local noticed ran
  noticed=$(at "$1" "$2" "RUNNING -> REBALANCING")
  ran=$(at "$1" "$2" "active tasks \\[0_0,0_1,0_2,0_3\\]")
  echo "$1 rebalanced $(secs "$3" "$noticed") s after the kill (session.timeout.ms 10 s) and ran all" \
    "4 tasks $(secs "$noticed" "$ran") s later"
}
# restored NAME LINE: "R records in T ms" summed over NAME's restore lines after LINE.
restored() {
  tail -n +"$(($2 + 1))" "$DIR/$1.log" | awk '/ restored receita-por-cliente / {
      for (i = 1; i <= NF; i++) { if ($i == "records") r += $(i - 1); if ($i == "ms") t += $(i - 1) }
      n++ } END { printf "%d records in %d partitions, %d ms of restoring", r, n, t }'
}

psql_db() { psql -X -q -v ON_ERROR_STOP=1 -d $DB "$@"; }
orders() { psql_db -Atc "SELECT count(*) FROM pedidos WHERE cliente_id < 1000"; }
# wait_orders N: until the writer has committed N orders (it must not have failed).
orders_at_least() {
  [ "$(orders)" -ge "$1" ] && return 0
  kill -0 "$(pid_of writer)" 2>/dev/null || die "the order writer stopped (log: $DIR/writer.log)"
  return 1
}
wait_orders() { wait_for "$TIMEOUT" "$1 orders written" orders_at_least "$1"; }
writer_done() { ! kill -0 "$(pid_of writer)" 2>/dev/null; }
# wait_writer: until the writer has ended (with a timeout); dies if it failed.
wait_writer() {
  wait_for "$TIMEOUT" "the order writer to finish" writer_done
  wait "$(pid_of writer)" || die "the order writer failed (log: $DIR/writer.log)"
}
# expected_revenue FILE: the SQL revenue per client and window (the exercise's client left out).
expected_revenue() {
  psql_db -At -F $'\t' -c "SELECT cliente_id, window_start, receita, pedidos FROM receita_5min
                            WHERE cliente_id < 1000 ORDER BY 1, 2" >"$1"
}

# ------------------------------------------------------------------------------ clean slate
log "clean slate: database $DB, slot $SLOT, the pipeline's topics"
# What a run killed before its clean-up left running.
for f in "$DIR"/*.pid; do [ -f "$f" ] && signal KILL "$f"; done
"$EX/s3/stop.sh" --clean
# The slot: its walsender (of a pgcdc killed a moment ago) may not have noticed yet.
psql -X -q -d postgres -c "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
                            WHERE slot_name = '$SLOT' AND active" >/dev/null
slot_free() {
  [ "$(psql -X -d postgres -Atc "SELECT count(*) FROM pg_replication_slots
                                  WHERE slot_name = '$SLOT' AND active")" = 0 ]
}
wait_for 30 "slot $SLOT to be released" slot_free
psql -X -q -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
                            WHERE slot_name = '$SLOT'" >/dev/null
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
psql -X -q -d postgres -c "CREATE DATABASE $DB"
psql_db -f "$EX/schema.sql"
java_tool loja.pedidos.Topics "$KAFKA" delete-groups \
  'pedidos-agregador.*|exercicio-grace.*|connect-pedidos-to-s3' >&2
java_tool loja.pedidos.Topics "$KAFKA" delete \
  '(pedidos|exercicio)\..*|pipeline\..*|pedidos-cdc-offsets|(pedidos-agregador|exercicio-grace|seed-s3-).*' >&2
rm -rf "$DIR" && mkdir -p "$DIR"
java_tool loja.pedidos.Topics "$KAFKA" create pedidos.criados:4 pedidos.receita-5min:4 \
  pedidos.receita-5min-replay:4 exercicio.criados:1 exercicio.receita-grace1:1 exercicio.receita-grace10:1

# ------------------------------------------------------------------------------ the run
log "starting pgcdc, two Streams instances (a, b) of pedidos-agregador and the S3 sink"
start_pgcdc
"$EX/s3/start.sh" pedidos.criados
start_streams a pedidos-agregador 1 pedidos.criados pedidos.receita-5min 1
start_streams b pedidos-agregador 1 pedidos.criados pedidos.receita-5min 1
wait_for 120 "both Streams instances to run" running a b

# Simulated time: 2.5 hours of orders ending half an hour ago (the broker refuses record
# timestamps more than an hour ahead and deletes them after 4 hours; the windows' output records
# carry the orders' times).
now=$(date +%s)
START=$(((now - 3 * 3600) / 300 * 300))
log "writing $ORDERS orders of $CLIENTS clients ($RATE/s), order times from $(date -u -d @"$START" +%H:%M) UTC"
start writer "$EX/write-orders.sh" "$ORDERS" "$CLIENTS" "$START" 9000 "$RATE" 7

wait_orders $((ORDERS / 5))
log "kill -9 pgcdc at $(orders) orders, and start it again"
kill9 pgcdc
start_pgcdc

wait_orders $((ORDERS * 2 / 5))
mark=$(lines b)
# The standby is there: b's latest assignment before the kill holds standby tasks.
grep -- "-> RUNNING" "$DIR/b.log" | tail -n 1 | grep -q 'standby tasks \[0_' \
  || die "instance b holds no standby task before the kill (num.standby.replicas ignored?)"
log "kill -9 Streams instance a at $(orders) orders: b (its standby) takes its tasks"
t_kill=$(date +%s.%N)
kill9 a
wait_for 120 "instance b to run all four tasks" all_active b "$mark"
result "takeover with a standby: $(takeover b "$mark" "$t_kill"); restored $(restored b "$mark")"
start_streams a pedidos-agregador 1 pedidos.criados pedidos.receita-5min 1

wait_orders $((ORDERS * 4 / 5))
log "kill -9 pgcdc, Streams instance b and the S3 sink's Connect worker, one right after the other," \
  "at $(orders) orders, and start them again"
kill9 pgcdc
kill9 b
signal KILL "$ROOT/target/seed/connect/connect.pid"
start_pgcdc
start_streams b pedidos-agregador 1 pedidos.criados pedidos.receita-5min 1
"$EX/s3/start.sh" pedidos.criados

wait_writer
log "all $ORDERS orders written"
expected_revenue "$DIR/expected.tsv"

# ------------------------------------------------------------------------------ checks
# 1. Every order exactly once on pedidos.criados (pgcdc was killed twice mid-transaction).
count_events() {
  kcat -b "$KAFKA" -C -t pedidos.criados -X isolation.level=read_committed -e -q -f '%s\n' 2>/dev/null \
    | grep -o '"pedido_id":[0-9]*' >"$DIR/events.txt" || true
  [ "$(wc -l <"$DIR/events.txt")" -ge "$ORDERS" ]
}
wait_for "$TIMEOUT" "$ORDERS events on pedidos.criados" count_events
events=$(wc -l <"$DIR/events.txt")
distinct=$(sort -u "$DIR/events.txt" | wc -l)
[ "$events" = "$ORDERS" ] && [ "$distinct" = "$ORDERS" ] \
  || die "pedidos.criados holds $events events of $distinct orders, for $ORDERS orders written"
result "pedidos.criados: $ORDERS orders written, $events events read_committed, each order once" \
  "(pgcdc killed twice)"

# 1b. Every order once in the bucket (the sink's worker was killed once).
psql_db -Atc "SELECT id FROM pedidos WHERE cliente_id < 1000" >"$DIR/order-ids.txt"
"$EX/s3/check.sh" -T "$TIMEOUT" "$ORDERS" "$DIR/order-ids.txt" >"$DIR/check-s3.txt" \
  || { cat "$DIR/check-s3.txt" >&2; die "the bucket does not hold each order once"; }
result "$(cat "$DIR/check-s3.txt") (the sink's worker killed once)"

# 2. The revenue equals SQL's.
java_tool loja.pedidos.ReceitaCheck "$KAFKA" pedidos.receita-5min "$DIR/expected.tsv" "$TIMEOUT" \
  "revenue (pgcdc killed twice, Streams instances a then b killed)" >"$DIR/check-revenue.txt" \
  || { cat "$DIR/check-revenue.txt" >&2; die "the revenue differs from SQL's"; }
result "$(cat "$DIR/check-revenue.txt")"

# 4. A replay: a new application.id reads the topic from the start, as one instance (r1) without
# a standby. Once it has caught up it is killed, and a new instance (r2) with an empty state
# directory, as on a new machine, takes its tasks: it rebuilds every task's state from the
# changelog. (An instance that owned a task before keeps its state on disk and restores only what
# changed since: killing one of two instances would not always measure a rebuild.)
log "replay: pedidos-agregador-replay (no standby), instance r1"
start_streams r1 pedidos-agregador-replay 0 pedidos.criados pedidos.receita-5min-replay 1
java_tool loja.pedidos.ReceitaCheck "$KAFKA" pedidos.receita-5min-replay "$DIR/expected.tsv" "$TIMEOUT" \
  "replay (new application.id)" >"$DIR/check-replay.txt" \
  || { cat "$DIR/check-replay.txt" >&2; die "the replay's revenue differs from SQL's"; }
result "$(cat "$DIR/check-replay.txt")"
t_kill=$(date +%s.%N)
kill9 r1
start_streams r2 pedidos-agregador-replay 0 pedidos.criados pedidos.receita-5min-replay 1
wait_for 120 "the new instance r2 to run all four tasks" all_active r2 0
result "rebuild without a standby: a new instance r2 ran all 4 tasks" \
  "$(secs "$t_kill" "$(at r2 0 'active tasks \[0_0,0_1,0_2,0_3\]')") s after r1 was killed (its start and" \
  "r1's session timeout included); restored $(restored r2 0)"
# The rebuilt state is right: more orders in the last window of the span, still open (its end
# plus the grace is after stream time), add to the restored sums in both applications.
log "100 more orders in the last window, after the takeovers"
start writer "$EX/write-orders.sh" 100 "$CLIENTS" $((START + 8950)) 49 "$RATE" 8
wait_writer
expected_revenue "$DIR/expected-after.tsv"
for app in pedidos.receita-5min pedidos.receita-5min-replay; do
  java_tool loja.pedidos.ReceitaCheck "$KAFKA" "$app" "$DIR/expected-after.tsv" "$TIMEOUT" \
    "$app after the takeovers, 100 orders more" >"$DIR/check-after-$app.txt" \
    || { cat "$DIR/check-after-$app.txt" >&2; die "$app differs from SQL after the takeover"; }
  result "$(cat "$DIR/check-after-$app.txt")"
done

# 5. The seed's exercise, on its own topic (stream time is per partition: other clients' orders
# would move it). H is the hour two hours ago, within the broker's timestamp limits.
H=$(((now - 2 * 3600) / 3600 * 3600))
hm() { date -u -d @"$1" +%H:%M; }
log "exercise: orders at $(hm $((H + 120))) and $(hm $((H + 240))), then one at $(hm $((H - 60)))"
start_streams g1 exercicio-grace1 0 exercicio.criados exercicio.receita-grace1 1
start_streams g10 exercicio-grace10 0 exercicio.criados exercicio.receita-grace10 10
wait_for 120 "the exercise's instances to run" running g1 g10
for t in $((H + 120)) $((H + 240)) $((H - 60)); do
  psql_db -Atc "SELECT registrar_pedido(1077, 10.00, to_timestamp($t), 'exercicio')" >/dev/null
done
printf '1077\t%s\t20.00\t2\n' "$((H * 1000))" >"$DIR/expected-grace1.tsv"
printf '1077\t%s\t10.00\t1\n1077\t%s\t20.00\t2\n' "$(((H - 300) * 1000))" "$((H * 1000))" \
  >"$DIR/expected-grace10.tsv"
wait_for "$TIMEOUT" "grace 1: dropped-records-total=1" grep -q "dropped-records-total=1$" "$DIR/g1.log"
java_tool loja.pedidos.ReceitaCheck "$KAFKA" exercicio.receita-grace1 "$DIR/expected-grace1.tsv" 30 \
  "grace 1 min" >"$DIR/check-grace1.txt" || { cat "$DIR/check-grace1.txt" >&2; die "grace 1: wrong windows"; }
java_tool loja.pedidos.ReceitaCheck "$KAFKA" exercicio.receita-grace10 "$DIR/expected-grace10.tsv" \
  "$TIMEOUT" "grace 10 min" >"$DIR/check-grace10.txt" \
  || { cat "$DIR/check-grace10.txt" >&2; die "grace 10: wrong windows"; }
! grep -q "dropped-records-total=[1-9]" "$DIR/g10.log" || die "grace 10 dropped a record"
result "exercise, grace 1 min: the $(hm $((H - 60))) order came after stream time passed" \
  "$(hm $((H + 60))) (the $(hm $((H - 300)))-$(hm "$H") window's end + grace): dropped," \
  "dropped-records-total=1; only the $(hm "$H") window (2 orders, 20.00)"
result "exercise, grace 10 min: the same order updates the $(hm $((H - 300)))-$(hm "$H") window" \
  "(10.00); dropped-records-total=0"

log "done"
printf '%s\n' "${results[@]}" | tee "$DIR/results.txt"
