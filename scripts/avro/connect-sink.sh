#!/usr/bin/env bash
# A Kafka Connect sink task reading Avro topics, as a Connect user's sink would: Kafka Connect
# 4.3 standalone (the harness's worker, scripts/debezium/setup.sh) running the FileStreamSink
# connector that ships with Kafka (connect-file, fetched here from Maven Central once), with
# Apicurio Registry's AvroConverter as key and value converter in its Confluent compatibility
# mode (Confluent's AvroConverter is not on Maven Central). The sink writes each record's
# decoded value as Connect prints it (Struct{...}, or null for a tombstone), one line per record;
# a key or value the converter cannot read fails the task, and the script with it.
#
# Usage: scripts/avro/connect-sink.sh BOOTSTRAP APICURIO_V2_URL OUT_FILE TOPIC=COUNT...
#   APICURIO_V2_URL  the registry's .../apis/registry/v2
#   OUT_FILE         the sink's file; the script returns once it holds the sum of the COUNTs
#                    lines, then stops the worker (exit 1 after DBZ_TIMEOUT seconds, default 180,
#                    or when the task fails, with the worker's log on stderr)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
[ $# -ge 4 ] || { echo "usage: $0 BOOTSTRAP APICURIO_V2_URL OUT_FILE TOPIC=COUNT..." >&2; exit 2; }
BOOTSTRAP=$1 REGISTRY=$2 OUT=$3
shift 3
KAFKA_VERSION=4.3.0
DBZ="$ROOT/target/debezium"
TIMEOUT="${DBZ_TIMEOUT:-180}"
log() { printf 'connect-sink: %s\n' "$*" >&2; }
die() { printf 'connect-sink: ERROR: %s\n' "$*" >&2; exit 1; }

"$ROOT/scripts/debezium/setup.sh" >/dev/null 2>&1 || "$ROOT/scripts/debezium/setup.sh"
FILE_LIB="$DBZ/connect-file"
if [ ! -f "$FILE_LIB/connect-file-$KAFKA_VERSION.jar" ]; then
  log "resolving org.apache.kafka:connect-file:$KAFKA_VERSION"
  mvn -q -B -f "$DBZ/connect-pom.xml" dependency:copy -Dartifact="org.apache.kafka:connect-file:$KAFKA_VERSION" \
      -DoutputDirectory="$FILE_LIB" >"$DBZ/mvn-connect-file.log" 2>&1 \
    || { tail -n 30 "$DBZ/mvn-connect-file.log" >&2; die "mvn could not fetch connect-file"; }
fi

topics=() want=0
for tc in "$@"; do topics+=("${tc%=*}"); want=$((want + ${tc##*=})); done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/connect-sink.XXXXXX")
NAME="avro-sink-$(basename "$WORK" | tr -c 'A-Za-z0-9\n' '-')"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
: >"$OUT"
cat >"$WORK/worker.properties" <<EOF
bootstrap.servers=$BOOTSTRAP
listeners=http://127.0.0.1:$PORT
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
offset.storage.file.filename=$WORK/offsets
plugin.path=$DBZ/plugins
plugin.discovery=service_load
EOF
converter() {
  local p=$1
  cat <<EOF
$p.converter=io.apicurio.registry.utils.converter.AvroConverter
$p.converter.apicurio.registry.url=$REGISTRY
$p.converter.apicurio.registry.as-confluent=true
$p.converter.apicurio.registry.use-id=contentId
$p.converter.apicurio.registry.headers.enabled=false
EOF
}
{
  echo "name=$NAME"
  echo "connector.class=org.apache.kafka.connect.file.FileStreamSinkConnector"
  echo "tasks.max=1"
  echo "topics=$(IFS=,; echo "${topics[*]}")"
  echo "file=$OUT"
  echo "consumer.override.auto.offset.reset=earliest"
  converter key
  converter value
} >"$WORK/sink.properties"
cat >"$WORK/log4j2.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders><File name="f" fileName="${sys:kafka.logs.dir}/connect.log"><PatternLayout pattern="[%d{ISO8601}] %p %m (%c)%n"/></File></Appenders>
  <Loggers><Root level="INFO"><AppenderRef ref="f"/></Root><Logger name="org.apache.kafka.clients" level="WARN"/></Loggers>
</Configuration>
EOF

setsid java -Xms128m -Xmx512m -XX:+UseSerialGC -XX:-UsePerfData "-Djava.io.tmpdir=$WORK" \
  "-Dkafka.logs.dir=$WORK" "-Dlog4j2.configurationFile=$WORK/log4j2.xml" \
  -cp "$DBZ/connect-lib/*:$FILE_LIB/*" org.apache.kafka.connect.cli.ConnectStandalone \
  "$WORK/worker.properties" "$WORK/sink.properties" </dev/null >"$WORK/stdout.log" 2>&1 9>&- &
PID=$!
stop() { kill -TERM -- "-$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
trap stop EXIT
log "Kafka Connect standalone (pid $PID, REST 127.0.0.1:$PORT): FileStreamSink $NAME reading ${topics[*]} into $OUT"
deadline=$(( $(date +%s) + TIMEOUT ))
while [ "$(wc -l <"$OUT")" -lt "$want" ]; do
  failed=$(curl -fsS -m 5 "http://127.0.0.1:$PORT/connectors/$NAME/status" 2>/dev/null | grep -o '"state":"FAILED".*' || true)
  if [ -n "$failed" ] || ! kill -0 "$PID" 2>/dev/null || [ "$(date +%s)" -ge "$deadline" ]; then
    printf '%s\n' "$failed" | sed 's/\\n/\n/g; s/\\t/\t/g' | head -n 20 >&2
    tail -n 40 "$WORK/connect.log" >&2 || true
    die "$(wc -l <"$OUT") of $want records in $OUT (worker log above; work dir $WORK)"
  fi
  sleep 0.2
done
log "$want records written to $OUT"
stop
trap - EXIT
rm -rf "$WORK"
