#!/usr/bin/env bash
# Fetches what the Debezium side of the differential harness needs, from Maven Central, once:
#   target/debezium/connect-lib   Kafka Connect worker (connect-runtime 4.3.0) + log4j2 + slf4j binding
#   target/debezium/plugins       debezium-connector-postgres 3.6.1.Final plugin archive, unpacked,
#                                 and Apicurio Registry's Avro converter 2.6.13.Final with its
#                                 dependencies (plugins/apicurio-converter), for the Avro pass
# The Kafka broker jars are not fetched here: the third broker reuses target/services/kafka/lib
# (scripts/services.sh start kafka fills it).
#
# Usage: scripts/debezium/setup.sh      (a second run is a no-op; remove target/debezium/connect-lib
#                                        or target/debezium/plugins to fetch again)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
DBZ="$ROOT/target/debezium"
KAFKA_VERSION="${DBZ_KAFKA_VERSION:-4.3.0}"
DEBEZIUM_VERSION="${DBZ_DEBEZIUM_VERSION:-3.6.1.Final}"
APICURIO_CONVERTER_VERSION=2.6.13.Final
LOG4J_VERSION=2.25.3          # the same as scripts/services.sh uses for the brokers
CONNECT_LIB="$DBZ/connect-lib"
PLUGINS="$DBZ/plugins"

log() { printf 'dbz-setup: %s\n' "$*" >&2; }
die() { printf 'dbz-setup: ERROR: %s\n' "$*" >&2; exit 1; }

command -v java >/dev/null 2>&1 || die "missing: java 17+"
command -v mvn >/dev/null 2>&1 || die "missing: mvn (apt-get install maven)"
mkdir -p "$DBZ"

# copy_dependencies NAME DIR GROUP:ARTIFACT:VERSION...: the runtime jars of those artifacts
# and their dependencies into DIR (emptied first), through a throw-away pom
# $DBZ/NAME-pom.xml (kept: later mvn calls reuse it as their project); log $DBZ/mvn-NAME.log.
copy_dependencies() {
  local name=$1 dir=$2 gav g a v
  shift 2
  {
    cat <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Throw-away pom written by scripts/debezium/setup.sh: only used to copy jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.pgcdc</groupId>
  <artifactId>$name</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
EOF
    for gav in "$@"; do
      IFS=: read -r g a v <<<"$gav"
      echo "    <dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>"
    done
    cat <<'EOF'
  </dependencies>
  <build><pluginManagement><plugins>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version></plugin>
  </plugins></pluginManagement></build>
</project>
EOF
  } >"$DBZ/$name-pom.xml"
  rm -rf "$dir"
  mvn -B -f "$DBZ/$name-pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$dir" >"$DBZ/mvn-$name.log" 2>&1 \
    || { tail -n 30 "$DBZ/mvn-$name.log" >&2; die "mvn could not resolve $* (log: $DBZ/mvn-$name.log)"; }
}

connect_libs() {
  local want="connect-runtime:$KAFKA_VERSION log4j:$LOG4J_VERSION"
  if [ -f "$CONNECT_LIB/.complete" ] && [ "$(cat "$CONNECT_LIB/.complete")" = "$want" ]; then
    log "connect-lib: cached ($(ls "$CONNECT_LIB" | wc -l) jars)"; return 0
  fi
  log "connect-lib: resolving org.apache.kafka:connect-runtime:$KAFKA_VERSION + log4j $LOG4J_VERSION"
  copy_dependencies connect "$CONNECT_LIB.new" \
    "org.apache.kafka:connect-runtime:$KAFKA_VERSION" "org.apache.kafka:connect-json:$KAFKA_VERSION" \
    "org.apache.logging.log4j:log4j-api:$LOG4J_VERSION" "org.apache.logging.log4j:log4j-core:$LOG4J_VERSION" \
    "org.apache.logging.log4j:log4j-slf4j-impl:$LOG4J_VERSION"
  [ -f "$CONNECT_LIB.new/connect-runtime-$KAFKA_VERSION.jar" ] || die "connect-runtime-$KAFKA_VERSION.jar missing after mvn"
  # Exactly one Kafka version and one slf4j API on the worker classpath (see the research note, §3/§4).
  local bad
  bad=$(ls "$CONNECT_LIB.new" | grep -E '^(kafka-clients|connect-[a-z-]+)-[0-9]' | grep -v -- "-$KAFKA_VERSION.jar" || true)
  [ -z "$bad" ] || die "other Kafka versions on the Connect classpath: $bad"
  ls "$CONNECT_LIB.new" | grep -q '^slf4j-api-2' && die "slf4j-api 2.x on the Connect classpath (log4j-slf4j-impl would go silent)"
  echo "$want" >"$CONNECT_LIB.new/.complete"
  rm -rf "$CONNECT_LIB"; mv "$CONNECT_LIB.new" "$CONNECT_LIB"
  log "connect-lib: $(ls "$CONNECT_LIB" | wc -l) jars in $CONNECT_LIB"
}

debezium_plugin() {
  local want="debezium-connector-postgres:$DEBEZIUM_VERSION" dl="$DBZ/dl"
  if [ -f "$PLUGINS/.complete" ] && [ "$(cat "$PLUGINS/.complete")" = "$want" ]; then
    log "plugins: cached ($(ls "$PLUGINS/debezium-connector-postgres" | wc -l) files)"; return 0
  fi
  log "plugins: resolving io.debezium:debezium-connector-postgres:$DEBEZIUM_VERSION:tar.gz:plugin"
  mkdir -p "$dl"
  # dependency:copy needs a project only for its plugin version; reuse the throw-away pom.
  [ -f "$DBZ/connect-pom.xml" ] || die "internal: connect-pom.xml missing"
  mvn -B -f "$DBZ/connect-pom.xml" dependency:copy \
      -Dartifact="io.debezium:debezium-connector-postgres:$DEBEZIUM_VERSION:tar.gz:plugin" \
      -DoutputDirectory="$dl" >"$DBZ/mvn-plugin.log" 2>&1 \
    || { tail -n 30 "$DBZ/mvn-plugin.log" >&2; die "mvn could not fetch the Debezium plugin archive (log: $DBZ/mvn-plugin.log)"; }
  local tgz="$dl/debezium-connector-postgres-$DEBEZIUM_VERSION-plugin.tar.gz"
  [ -s "$tgz" ] || die "$tgz missing after mvn"
  rm -rf "$PLUGINS.new"; mkdir -p "$PLUGINS.new"
  tar -xzf "$tgz" -C "$PLUGINS.new"
  [ -d "$PLUGINS.new/debezium-connector-postgres" ] || die "the archive has no debezium-connector-postgres/ folder: $(ls "$PLUGINS.new")"
  ls "$PLUGINS.new/debezium-connector-postgres" | grep -q "^debezium-connector-postgres-$DEBEZIUM_VERSION.jar$" \
    || die "debezium-connector-postgres-$DEBEZIUM_VERSION.jar not in the archive"
  echo "$want" >"$PLUGINS.new/.complete"
  rm -rf "$PLUGINS"; mv "$PLUGINS.new" "$PLUGINS"
  log "plugins: $(ls "$PLUGINS/debezium-connector-postgres" | wc -l) files in $PLUGINS/debezium-connector-postgres"
}

# Apicurio's Avro converter as a Connect plugin: its jars without the Kafka and slf4j jars the
# worker provides, plus a service manifest (the jar has none, and the worker discovers plugins
# with plugin.discovery=service_load).
apicurio_converter() {
  local want="apicurio-registry-utils-converter:$APICURIO_CONVERTER_VERSION" dir="$PLUGINS/apicurio-converter"
  if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$want" ]; then
    log "apicurio converter: cached ($(ls "$dir" | wc -l) files)"; return 0
  fi
  log "apicurio converter: resolving io.apicurio:apicurio-registry-utils-converter:$APICURIO_CONVERTER_VERSION"
  command -v jar >/dev/null 2>&1 || die "missing: jar (a JDK)"
  copy_dependencies apicurio "$dir.new" "io.apicurio:apicurio-registry-utils-converter:$APICURIO_CONVERTER_VERSION"
  [ -f "$dir.new/apicurio-registry-utils-converter-$APICURIO_CONVERTER_VERSION.jar" ] || die "the converter jar is missing after mvn"
  rm -f "$dir.new"/kafka-clients-*.jar "$dir.new"/connect-*.jar "$dir.new"/slf4j-*.jar \
        "$dir.new"/lz4-java-*.jar "$dir.new"/snappy-java-*.jar "$dir.new"/zstd-jni-*.jar
  rm -rf "$DBZ/apicurio-manifest"; mkdir -p "$DBZ/apicurio-manifest/META-INF/services"
  echo io.apicurio.registry.utils.converter.AvroConverter \
    >"$DBZ/apicurio-manifest/META-INF/services/org.apache.kafka.connect.storage.Converter"
  jar cf "$dir.new/apicurio-converter-services.jar" -C "$DBZ/apicurio-manifest" META-INF
  echo "$want" >"$dir.new/.complete"
  rm -rf "$dir"; mv "$dir.new" "$dir"
  log "apicurio converter: $(ls "$dir" | wc -l) files in $dir"
}

connect_libs
debezium_plugin
apicurio_converter
log "ready: connect-lib=$CONNECT_LIB plugin.path=$PLUGINS"
