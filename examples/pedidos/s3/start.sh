#!/usr/bin/env bash
# Starts the S3 side of the example pipeline and creates the sink connector:
#   s3proxy (an S3 server, filesystem backend under target/seed/s3-data/, one directory per
#     bucket) on 127.0.0.1:58090, signatures v2/v4 with the fixed test identity of lib.sh;
#   a Kafka Connect 4.3.0 distributed worker (REST 127.0.0.1:58093, group seed-s3-connect,
#     topics seed-s3-configs/-offsets/-status) against the local Kafka 127.0.0.1:59092;
#   the connector of pedidos-to-s3.json (PUT /connectors/pedidos-to-s3/config, so a second run
#     updates it), reading TOPIC (default pedidos.criados) with isolation.level=read_committed.
# What is already running is kept (a changed TOPIC only updates the connector). PIDs and logs
# under target/seed/ (s3proxy-run/, connect/logs/). Each step prints how long it took.
#
# Usage: examples/pedidos/s3/start.sh [TOPIC]
#   SEED_S3_FLUSH_MS   the worker's offset.flush.interval.ms: how often the open objects are
#                      written and the offsets committed (default 10000; see README.md)
#   SEED_S3_FILE_MAX_RECORDS  overrides the connector's file.max.records (selftest.sh: small
#                      objects, so that a flush is many PUTs and the crash lands inside one)
#   SEED_S3_TIMEOUT    seconds each wait may take (default 180)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=examples/pedidos/s3/lib.sh
. "$HERE/lib.sh"

TOPIC=${1:-pedidos.criados}
FLUSH_MS=${SEED_S3_FLUSH_MS:-10000}

for c in java curl jq kcat; do command -v "$c" >/dev/null 2>&1 || die "missing: $c"; done
"$HERE/setup.sh"
timeout 10 kcat -L -b "$KAFKA" -m 5 -t __none__ >/dev/null 2>&1 \
  || die "Kafka is not reachable on $KAFKA (scripts/services.sh start kafka)"

# HTTP status of a signed (v4) HEAD of the bucket; 000 while nothing answers.
s3_head() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 -I --aws-sigv4 "aws:amz:$S3_REGION:s3" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" "$S3_ENDPOINT/$BUCKET" || true
}

start_s3proxy() {
  local t0 pid deadline code
  if pid=$(s3proxy_pid); then
    code=$(s3_head)
    [ "$code" = 200 ] || die "s3proxy: running (pid $pid) but HEAD /$BUCKET answers $code (stop.sh, then start.sh)"
    log "s3proxy: running (pid $pid)"; return 0
  fi
  t0=$(now)
  port_open "$S3_PORT" && die "s3proxy: port $S3_PORT is in use by another process"
  mkdir -p "$S3_RUN/tmp" "$S3_DATA/$BUCKET"   # with the filesystem backend a bucket is a directory
  cat >"$S3_RUN/s3proxy.properties" <<EOF
# Written by examples/pedidos/s3/start.sh.
s3proxy.endpoint=$S3_ENDPOINT
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$S3_ACCESS_KEY
s3proxy.credential=$S3_SECRET_KEY
jclouds.provider=filesystem
jclouds.filesystem.basedir=$S3_DATA
jclouds.identity=unused
jclouds.credential=unused
EOF
  pid=$(launch "$S3_RUN/s3proxy.pid" "$S3_RUN/s3proxy.log" \
        java -Xms64m -Xmx256m -XX:-UsePerfData "-Djava.io.tmpdir=$S3_RUN/tmp" \
          -jar "$SEED/s3proxy/s3proxy-2.7.0-jar-with-dependencies.jar" --properties "$S3_RUN/s3proxy.properties")
  log "s3proxy: starting (pid $pid) on $S3_ENDPOINT, data in target/seed/s3-data/"
  deadline=$(( $(date +%s) + TIMEOUT ))
  while code=$(s3_head); [ "$code" = 000 ]; do
    kill -0 "$pid" 2>/dev/null || { tail -n 30 "$S3_RUN/s3proxy.log" >&2; die "s3proxy exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "s3proxy: not answering after ${TIMEOUT}s (log: $S3_RUN/s3proxy.log)"
    sleep 0.2
  done
  [ "$code" = 200 ] || die "s3proxy: HEAD /$BUCKET answers $code (log: $S3_RUN/s3proxy.log)"
  log "s3proxy: ready in $(elapsed "$t0")s, bucket $BUCKET"
}

start_worker() {
  local t0 pid deadline
  if pid=$(connect_pid); then log "connect: running (pid $pid)"; return 0; fi
  t0=$(now)
  port_open "$REST_PORT" && die "connect: port $REST_PORT is in use by another process"
  mkdir -p "$CONNECT_RUN/logs" "$CONNECT_RUN/tmp"
  cat >"$CONNECT_RUN/worker.properties" <<EOF
# Written by examples/pedidos/s3/start.sh: the S3 sink's Kafka Connect worker.
bootstrap.servers=$KAFKA
listeners=http://127.0.0.1:$REST_PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$REST_PORT
group.id=$GROUP_ID
config.storage.topic=seed-s3-configs
offset.storage.topic=seed-s3-offsets
status.storage.topic=seed-s3-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.storage.partitions=1
status.storage.partitions=1
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=false
# A sink task writes its open objects, then commits its offsets, every offset.flush.interval.ms.
offset.flush.interval.ms=$FLUSH_MS
# One worker: when it comes back after a crash, its connector and tasks start at once, not after
# the default 5 minutes Connect keeps the work of a vanished worker for it.
scheduled.rebalance.max.delay.ms=0
# consumer.override.isolation.level in the connector config needs this.
connector.client.config.override.policy=All
plugin.path=$PLUGINS
plugin.discovery=service_load
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
    <Logger name="org.apache.hadoop" level="WARN"/>
    <Logger name="org.reflections" level="ERROR"/>
  </Loggers>
</Configuration>
EOF
  pid=$(launch "$CONNECT_RUN/connect.pid" "$CONNECT_RUN/logs/stdout.log" \
        java -server -Xms256m -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:-UsePerfData \
          -Djava.awt.headless=true "-Djava.io.tmpdir=$CONNECT_RUN/tmp" \
          "-DZstdTempFolder=$CONNECT_RUN/tmp" "-Dorg.xerial.snappy.tempdir=$CONNECT_RUN/tmp" \
          "-Dkafka.logs.dir=$CONNECT_RUN/logs" "-Dlog4j2.configurationFile=$CONNECT_RUN/log4j2.xml" \
          -cp "$CONNECT_LIB/*" org.apache.kafka.connect.cli.ConnectDistributed "$CONNECT_RUN/worker.properties")
  log "connect: starting a distributed worker (pid $pid), REST 127.0.0.1:$REST_PORT"
  deadline=$(( $(date +%s) + TIMEOUT ))
  # Jetty answers 404 until the herder has joined the group and registered its resources.
  until curl -sf --max-time 5 "http://127.0.0.1:$REST_PORT/connectors" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { tail -n 40 "$CONNECT_RUN/logs/connect.log" >&2; die "connect: worker exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || die "connect: REST API not up after ${TIMEOUT}s (target/seed/connect/logs)"
    sleep 0.2
  done
  log "connect: REST API up in $(elapsed "$t0")s"
}

create_connector() {
  local t0 code st deadline tasks running
  t0=$(now)
  jq --arg topic "$TOPIC" --arg max "${SEED_S3_FILE_MAX_RECORDS:-}" \
     '.config | .topics = $topic | if $max != "" then ."file.max.records" = $max else . end' \
     "$CONNECTOR_JSON" >"$CONNECT_RUN/connector-config.json" || die "cannot read $CONNECTOR_JSON"
  code=$(curl -sS --max-time 60 -o "$CONNECT_RUN/create.out" -w '%{http_code}' -X PUT \
         -H 'Content-Type: application/json' --data @"$CONNECT_RUN/connector-config.json" \
         "http://127.0.0.1:$REST_PORT/connectors/$CONNECTOR/config") || die "connect: PUT failed"
  case "$code" in
    200|201) ;;
    *) die "connect: PUT /connectors/$CONNECTOR/config answered $code: $(cat "$CONNECT_RUN/create.out")" ;;
  esac
  tasks=$(jq -r '."tasks.max" // "1"' "$CONNECT_RUN/connector-config.json")
  deadline=$(( $(date +%s) + TIMEOUT ))
  # The task configs of this config first (an update restarts the tasks), then their states.
  until rest "http://127.0.0.1:$REST_PORT/connectors/$CONNECTOR/tasks" 2>/dev/null \
        | jq -e --arg t "$TOPIC" --argjson n "$tasks" 'length == $n and all(.[]; .config.topics == $t)' \
        >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "connect: no task configs for topic $TOPIC after ${TIMEOUT}s"
    sleep 0.2
  done
  while :; do
    st=$(rest "http://127.0.0.1:$REST_PORT/connectors/$CONNECTOR/status" 2>/dev/null || true)
    if printf '%s' "$st" | jq -e '.tasks[]? | select(.state == "FAILED")' >/dev/null 2>&1 \
       || printf '%s' "$st" | jq -e '.connector.state == "FAILED"' >/dev/null 2>&1; then
      printf '%s\n' "$st" | jq -r '.. | .trace? // empty' | head -n 30 >&2
      die "connect: $CONNECTOR FAILED (log: $CONNECT_RUN/logs/connect.log)"
    fi
    running=$(printf '%s' "$st" | jq '[.tasks[]? | select(.state == "RUNNING")] | length' 2>/dev/null || echo 0)
    if printf '%s' "$st" | jq -e '.connector.state == "RUNNING"' >/dev/null 2>&1 && [ "$running" = "$tasks" ]; then
      break
    fi
    [ "$(date +%s)" -lt "$deadline" ] || die "connect: $CONNECTOR not RUNNING after ${TIMEOUT}s (last status: $st)"
    sleep 0.2
  done
  log "connector: $CONNECTOR RUNNING with $tasks tasks on topic $TOPIC in $(elapsed "$t0")s" \
      "(objects are written every ${FLUSH_MS} ms)"
}

mkdir -p "$SEED"
start_s3proxy
start_worker
create_connector
