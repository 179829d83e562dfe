# Sourced by scripts/debezium/*.sh. The Debezium side of the differential harness:
#   a third single-node KRaft broker on 127.0.0.1:59096 (controller 59097), state under
#   target/debezium/broker/, started the way scripts/services.sh starts its brokers and from the
#   same jars (target/services/kafka/lib);
#   Kafka Connect (REST 127.0.0.1:58083) with Debezium's PostgreSQL connector, standalone with
#   a file offset store for the differential runs, distributed (group.id, config/offset/status
#   topics) for the switch run; state under target/debezium/connect/.
# Every wait polls with a timeout (DBZ_TIMEOUT seconds, default 180), never a fixed sleep.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
DBZ="$ROOT/target/debezium"
TIMEOUT="${DBZ_TIMEOUT:-180}"
KAFKA_LIB="$ROOT/target/services/kafka/lib"
CONNECT_LIB="$DBZ/connect-lib"
PLUGINS="$DBZ/plugins"

DBZ_BROKER_PORT=59096
DBZ_CONTROLLER_PORT=59097
DBZ_REST_PORT=58083
# The Avro pass's two schema registries (Apicurio, in-memory), one per side, state under
# target/debezium/registry-{dbz,pgcdc}/.
REGISTRY_PORT_DBZ=58085
# pgcdc's REST API in the harness (the Connect worker has DBZ_REST_PORT).
PGCDC_REST_PORT=58086
REGISTRY_PORT_PGCDC=58084
BROKER_RUN="$DBZ/broker"
CONNECT_RUN="$DBZ/connect"
# The Connect worker's broker and heap. scripts/bench-compare.sh sources this file and then sets
# these (and DBZ_REST_PORT, CONNECT_RUN) to run its own worker beside the harness's.
CONNECT_BOOTSTRAP="127.0.0.1:$DBZ_BROKER_PORT"
CONNECT_HEAP=(-Xms256m -Xmx1g)

log() { printf 'dbz: %s\n' "$*" >&2; }
die() { printf 'dbz: ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# port_open, live_pid, stop_pid, launch
# shellcheck source=../lib/process.sh
. "$ROOT/scripts/lib/process.sh"

# --------------------------------------------------------------------------------------------
# The third broker
# --------------------------------------------------------------------------------------------

broker_pid() { live_pid "$BROKER_RUN/kafka.pid" "kafka.Kafka $BROKER_RUN/server.properties"; }

broker_ready() {
  port_open "$DBZ_BROKER_PORT" || return 1
  timeout 10 kcat -L -b "127.0.0.1:$DBZ_BROKER_PORT" -m 3 -X socket.connection.setup.timeout.ms=2000 2>/dev/null \
    | grep -qF "broker 1 at 127.0.0.1:$DBZ_BROKER_PORT"
}

broker_java_opts() {
  JOPTS=(-server -Xms256m -Xmx768m -XX:+UseG1GC -XX:MaxGCPauseMillis=20
         -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15
         -XX:-UsePerfData -Djava.awt.headless=true "-Djava.io.tmpdir=$BROKER_RUN/tmp"
         "-DZstdTempFolder=$BROKER_RUN/tmp" "-Dorg.xerial.snappy.tempdir=$BROKER_RUN/tmp"
         "-Dkafka.logs.dir=$BROKER_RUN/logs" "-Dlog4j2.configurationFile=$BROKER_RUN/log4j2.xml")
}

# Start the broker on empty storage (a fresh cluster per run: no topics from an earlier run).
broker_start_fresh() {
  local t0 pid id p
  t0=$(now)
  [ -f "$KAFKA_LIB/.complete" ] || die "no broker jars in $KAFKA_LIB (run: scripts/services.sh start kafka)"
  if pid=$(broker_pid); then log "broker: stopping the previous one (pid $pid)"; stop_pid "$pid" 60 broker; fi
  for p in "$DBZ_BROKER_PORT" "$DBZ_CONTROLLER_PORT"; do
    port_open "$p" && die "broker: port $p is in use by another process"
  done
  rm -rf "$BROKER_RUN"
  mkdir -p "$BROKER_RUN/logs" "$BROKER_RUN/tmp"
  cat >"$BROKER_RUN/server.properties" <<EOF
# Written by scripts/debezium/lib.sh on every start: the Debezium side's broker.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$DBZ_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$DBZ_BROKER_PORT,CONTROLLER://127.0.0.1:$DBZ_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$DBZ_BROKER_PORT,CONTROLLER://127.0.0.1:$DBZ_CONTROLLER_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$BROKER_RUN/data
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
EOF
  cat >"$BROKER_RUN/log4j2.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <File name="server" fileName="${sys:kafka.logs.dir}/server.log" append="true">
      <PatternLayout pattern="[%d{ISO8601}] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="server"/></Root>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Logger name="kafka.log.LogCleaner" level="WARN"/>
    <Logger name="org.apache.kafka.storage.internals.log" level="WARN"/>
    <Logger name="org.apache.kafka.clients" level="WARN"/>
    <Logger name="org.apache.kafka.common.config" level="WARN"/>
  </Loggers>
</Configuration>
EOF
  broker_java_opts
  id=$(java -Xmx256m -cp "$KAFKA_LIB/*" kafka.tools.StorageTool random-uuid 2>/dev/null) \
    || die "kafka.tools.StorageTool random-uuid failed"
  java "${JOPTS[@]}" -Xmx256m -cp "$KAFKA_LIB/*" kafka.tools.StorageTool format \
      --standalone --cluster-id="$id" -c "$BROKER_RUN/server.properties" >"$BROKER_RUN/logs/format.log" 2>&1 \
    || { cat "$BROKER_RUN/logs/format.log" >&2; die "broker: storage format failed"; }
  pid=$(launch "$BROKER_RUN/kafka.pid" "$BROKER_RUN/logs/stdout.log" \
        java "${JOPTS[@]}" -cp "$KAFKA_LIB/*" kafka.Kafka "$BROKER_RUN/server.properties")
  log "broker: starting Kafka (pid $pid) on 127.0.0.1:$DBZ_BROKER_PORT, controller $DBZ_CONTROLLER_PORT"
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until broker_ready; do
    kill -0 "$pid" 2>/dev/null || { tail -n 30 "$BROKER_RUN/logs/stdout.log" "$BROKER_RUN/logs/server.log" >&2 || true; die "broker exited during start-up"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "broker not ready after ${TIMEOUT}s (logs: $BROKER_RUN/logs)"
    sleep 0.1
  done
  log "broker: ready in $(elapsed "$t0")s"
}

# broker_stop [GRACE]: seconds to wait for a clean exit (60; 0 kills it at once).
broker_stop() {
  local pid
  if pid=$(broker_pid); then stop_pid "$pid" "${1:-60}" broker; log "broker: stopped"; else log "broker: not running"; fi
  rm -f "$BROKER_RUN/kafka.pid"
}

# --------------------------------------------------------------------------------------------
# Kafka Connect + Debezium: standalone (the differential runs) or distributed (the switch run)
# --------------------------------------------------------------------------------------------

connect_pid() { live_pid "$CONNECT_RUN/connect.pid" "$CONNECT_RUN/worker.properties"; }

rest() { curl -sS --max-time 5 "http://127.0.0.1:$DBZ_REST_PORT$1"; }

# connect_common_config: stops an earlier worker, empties $CONNECT_RUN, writes the log4j2
# config and the worker settings both modes share.
connect_common_config() {
  local pid
  [ -f "$CONNECT_LIB/.complete" ] && [ -f "$PLUGINS/.complete" ] || die "run scripts/debezium/setup.sh first"
  if pid=$(connect_pid); then log "connect: stopping the previous worker (pid $pid)"; stop_pid "$pid" 60 connect; fi
  port_open "$DBZ_REST_PORT" && die "connect: port $DBZ_REST_PORT is in use by another process"
  rm -rf "$CONNECT_RUN"
  mkdir -p "$CONNECT_RUN/logs" "$CONNECT_RUN/tmp"
  cat >"$CONNECT_RUN/worker.properties" <<EOF
# Written by scripts/debezium/lib.sh: the Kafka Connect worker of the Debezium side.
bootstrap.servers=$CONNECT_BOOTSTRAP
listeners=http://127.0.0.1:$DBZ_REST_PORT
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
header.converter=org.apache.kafka.connect.storage.SimpleHeaderConverter
offset.flush.interval.ms=${DBZ_OFFSET_FLUSH_MS:-1000}
plugin.path=$PLUGINS
plugin.discovery=${DBZ_PLUGIN_DISCOVERY:-service_load}
EOF
  cat >"$CONNECT_RUN/log4j2.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <File name="connect" fileName="${sys:kafka.logs.dir}/connect.log" append="true">
      <PatternLayout pattern="[%d{ISO8601}] %p %X{connector.context}%m (%c:%L)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="connect"/></Root>
    <Logger name="org.apache.kafka.clients" level="WARN"/>
    <Logger name="org.apache.kafka.common.config" level="WARN"/>
    <Logger name="org.reflections" level="ERROR"/>
  </Loggers>
</Configuration>
EOF
}

# connect_launch MAIN_CLASS ARGS...: the worker JVM, in its own session; prints its pid.
connect_launch() {
  launch "$CONNECT_RUN/connect.pid" "$CONNECT_RUN/logs/stdout.log" \
    java -server "${CONNECT_HEAP[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:-UsePerfData \
      -Djava.awt.headless=true "-Djava.io.tmpdir=$CONNECT_RUN/tmp" \
      "-DZstdTempFolder=$CONNECT_RUN/tmp" "-Dorg.xerial.snappy.tempdir=$CONNECT_RUN/tmp" \
      "-Dkafka.logs.dir=$CONNECT_RUN/logs" "-Dlog4j2.configurationFile=$CONNECT_RUN/log4j2.xml" \
      -cp "$CONNECT_LIB/*" "$@"
}

# connect_start CONNECTOR_JSON: a fresh standalone worker (empty offset file) running that connector.
connect_start() {
  local conn=$1 pid
  connect_common_config
  echo "offset.storage.file.filename=$CONNECT_RUN/connect.offsets" >>"$CONNECT_RUN/worker.properties"
  cp "$conn" "$CONNECT_RUN/connector.json"
  pid=$(connect_launch org.apache.kafka.connect.cli.ConnectStandalone \
        "$CONNECT_RUN/worker.properties" "$CONNECT_RUN/connector.json")
  log "connect: starting Kafka Connect standalone (pid $pid), REST 127.0.0.1:$DBZ_REST_PORT"
}

# The distributed worker's internal topics (Kafka Connect's usual names).
CONNECT_OFFSETS_TOPIC=connect-offsets
CONNECT_CONFIGS_TOPIC=connect-configs
CONNECT_STATUS_TOPIC=connect-status

# connect_start_distributed: a distributed worker (group.id, the config, offset and status
# topics with replication factor 1 and Connect's default partition counts) with no connector
# yet (connect_create adds one). Returns once its REST API answers.
connect_start_distributed() {
  local pid
  connect_common_config
  cat >>"$CONNECT_RUN/worker.properties" <<EOF
group.id=pgcdc-harness
config.storage.topic=$CONNECT_CONFIGS_TOPIC
offset.storage.topic=$CONNECT_OFFSETS_TOPIC
status.storage.topic=$CONNECT_STATUS_TOPIC
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$DBZ_REST_PORT
EOF
  pid=$(connect_launch org.apache.kafka.connect.cli.ConnectDistributed "$CONNECT_RUN/worker.properties")
  log "connect: starting Kafka Connect distributed (pid $pid), REST 127.0.0.1:$DBZ_REST_PORT"
  connect_wait_rest "$pid"
}

# connect_wait_rest PID: returns once the worker's REST API lists connectors.
connect_wait_rest() {
  local pid=$1 deadline=$(( $(date +%s) + TIMEOUT ))
  # Jetty answers 404 until the herder has joined the group and registered its resources.
  until curl -sf --max-time 5 "http://127.0.0.1:$DBZ_REST_PORT/connectors" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { tail -n 40 "$CONNECT_RUN/logs/stdout.log" "$CONNECT_RUN/logs/connect.log" >&2 || true; die "connect: worker exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "connect: REST API not up after ${TIMEOUT}s (log: $CONNECT_RUN/logs/connect.log)"
    sleep 0.2
  done
}

# connect_create CONNECTOR_JSON: creates the connector on a distributed worker.
connect_create() {
  local code
  code=$(curl -sS --max-time 30 -o "$CONNECT_RUN/create.out" -w '%{http_code}' -X POST \
         -H 'Content-Type: application/json' --data @"$1" "http://127.0.0.1:$DBZ_REST_PORT/connectors") \
    || die "connect: POST /connectors failed"
  case "$code" in
    201|409) ;;
    *) die "connect: POST /connectors answered $code: $(cat "$CONNECT_RUN/create.out")" ;;
  esac
}

# connect_wait_running NAME: connector and task 0 RUNNING.
connect_wait_running() {
  local name=$1 pid st deadline=$(( $(date +%s) + TIMEOUT ))
  pid=$(connect_pid) || die "connect: worker not running"
  while :; do
    st=$(rest "/connectors/$name/status" 2>/dev/null || true)
    if printf '%s' "$st" | grep -q '"connector":{"state":"RUNNING"' \
       && printf '%s' "$st" | grep -q '"tasks":\[{"id":0,"state":"RUNNING"'; then
      return 0
    fi
    if printf '%s' "$st" | grep -q '"state":"FAILED"'; then
      printf '%s\n' "$st" | sed 's/\\n/\n/g' | head -n 40 >&2
      die "connect: connector $name FAILED (log: $CONNECT_RUN/logs/connect.log)"
    fi
    kill -0 "$pid" 2>/dev/null || { tail -n 40 "$CONNECT_RUN/logs/stdout.log" "$CONNECT_RUN/logs/connect.log" >&2 || true; die "connect: worker exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "connect: $name not RUNNING after ${TIMEOUT}s (last status: $st)"
    sleep 0.2
  done
}

# connect_stop [GRACE]: as broker_stop.
connect_stop() {
  local pid
  if pid=$(connect_pid); then stop_pid "$pid" "${1:-60}" connect; log "connect: stopped"; else log "connect: not running"; fi
  rm -f "$CONNECT_RUN/connect.pid"
}

# --------------------------------------------------------------------------------------------
# The differential run's names and the clean-up shared by run.sh and stop.sh
# --------------------------------------------------------------------------------------------

PREFIX=diff
DB=dbz_diff
NAME=dbz-diff
SLOT_DBZ=dbz_diff_debezium
SLOT_PGCDC=dbz_diff_pgcdc
PG_HOST=127.0.0.1 PG_PORT=54329 PG_USER=postgres PG_PASSWORD=postgres
PGCDC_KAFKA=127.0.0.1:59092
DBZ_KAFKA=127.0.0.1:$DBZ_BROKER_PORT
RUN="$DBZ/run"
PGCDC_BIN=${PGCDC_BIN:-$ROOT/target/debug/pgcdc}
COMPARE_MANIFEST="$ROOT/tools/dbz-compare/Cargo.toml"
COMPARE="$ROOT/target/debug/dbz-compare"


export PGPASSWORD=$PG_PASSWORD PGOPTIONS="-c client_min_messages=warning"
psql_db() { psql -X -q -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d "$1" "${@:2}"; }
sql() { psql_db postgres -tAc "$1"; }

pgcdc_pid() { live_pid "$RUN/pgcdc.pid" "$PGCDC_BIN run"; }
# stop_all [GRACE]: pgcdc stops cleanly; the worker and the broker get GRACE seconds (60).
stop_all() {
  local pid
  if pid=$(pgcdc_pid); then stop_pid "$pid" 40 pgcdc; log "pgcdc: stopped"; fi
  rm -f "$RUN/pgcdc.pid"
  connect_stop "${1:-60}"
  broker_stop "${1:-60}"
  registries_stop
}
registries_stop() {
  local side port
  for side in dbz pgcdc; do
    [ -d "$DBZ/registry-$side" ] || continue
    port=$REGISTRY_PORT_DBZ; [ $side = pgcdc ] && port=$REGISTRY_PORT_PGCDC
    PGCDC_REGISTRY_PORT=$port PGCDC_REGISTRY_HOME="$DBZ/registry-$side" "$ROOT/scripts/services.sh" stop registry 2>/dev/null || true
  done
}
drop_slots() {
  local s
  for s in "$SLOT_DBZ" "$SLOT_PGCDC"; do
    # A slot still held by a walsender of a stopped client goes inactive within moments.
    local deadline=$(( $(date +%s) + 30 ))
    local active
    # An empty answer (PostgreSQL not running) ends the wait: there is nothing to drop then.
    while active=$(sql "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$s' AND active") \
        && [ "$active" != 0 ]; do
      [ "$(date +%s)" -lt "$deadline" ] || { log "slot $s still active; terminating its walsender"; \
        sql "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '$s' AND active" >/dev/null; }
      sleep 0.2
    done
    sql "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$s'" >/dev/null
  done
}

# The switch run's names (scripts/debezium/switch.sh): one slot for both sides, its own
# database, topic prefix and run directory.
switch_names() {
  PREFIX=swt
  DB=dbz_switch
  NAME=dbz-switch
  SLOT_DBZ=dbz_switch
  SLOT_PGCDC=dbz_switch
  RUN="$DBZ/switch"
}

# Stop everything the run started and drop what it created in PostgreSQL and on pgcdc's broker.
# The fetched jars (target/debezium/connect-lib, plugins) stay.
harness_cleanup() {
  # The worker and the Debezium side's broker are killed: the run is over, their state is
  # thrown away (the next run starts a fresh broker), and a clean stop took 10 s of every pass.
  stop_all 0 || true
  drop_slots || true
  sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null || true
  if [ -x "$COMPARE" ]; then
    "$COMPARE" delete-topics --brokers "$PGCDC_KAFKA" --prefix "$PREFIX." --prefix "__debezium-heartbeat.$PREFIX" >/dev/null 2>&1 || true
  fi
}
