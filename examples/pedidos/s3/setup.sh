#!/usr/bin/env bash
# Fetches what the S3 sink example needs, from Maven Central, once, into target/seed/:
#   target/seed/s3proxy/          org.gaul:s3proxy 2.7.0 (jar-with-dependencies): a local S3 server
#   target/seed/plugins/seed-s3-sink/
#                                 the Kafka Connect plugin: Aiven's connector library
#                                 io.aiven:commons-for-apache-kafka-connect 0.12.0 (file name
#                                 templates, record grouping, jsonl/csv/json/avro/parquet writers,
#                                 compression), the AWS SDK v2 S3 client 2.59.1, and the small S3
#                                 sink task of connector/ compiled against them (see README.md: Aiven's
#                                 and Camel's S3 sink connectors are not served by the registry here)
# The Connect 4.3.0 worker jars come from scripts/debezium/setup.sh (target/debezium/connect-lib),
# which this script runs when they are missing (it is a no-op when they are cached).
#
# Usage: examples/pedidos/s3/setup.sh   (a second run is a no-op; remove target/seed/s3proxy or
#                                        target/seed/plugins to fetch or build again)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=examples/pedidos/s3/lib.sh
. "$HERE/lib.sh"

S3PROXY_VERSION=2.7.0
AIVEN_COMMONS_VERSION=0.12.0
AWS_SDK_VERSION=2.59.1
GUAVA_VERSION=33.8.0-jre

command -v java >/dev/null 2>&1 || die "missing: java 17+"
command -v javac >/dev/null 2>&1 || die "missing: javac (a JDK 17+)"
command -v jar >/dev/null 2>&1 || die "missing: jar (a JDK 17+)"
command -v mvn >/dev/null 2>&1 || die "missing: mvn (apt-get install maven)"
mkdir -p "$SEED"

connect_worker() {
  if [ -f "$CONNECT_LIB/.complete" ]; then
    log "connect-lib: cached ($(find "$CONNECT_LIB" -name '*.jar' | wc -l) jars in target/debezium/connect-lib)"
    return 0
  fi
  log "connect-lib: missing; running scripts/debezium/setup.sh"
  "$ROOT/scripts/debezium/setup.sh"
  [ -f "$CONNECT_LIB/.complete" ] || die "scripts/debezium/setup.sh did not fill $CONNECT_LIB"
}

# A throw-away project: maven-dependency-plugin needs one for its version and for copy-dependencies.
# write_pom NAME DEPENDENCIES_XML
write_pom() {
  cat >"$SEED/$1-pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Throw-away pom written by examples/pedidos/s3/setup.sh: only used to copy jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.pgcdc.seed</groupId>
  <artifactId>$1</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$2
  </dependencies>
  <build><pluginManagement><plugins>
    <plugin>
      <groupId>org.apache.maven.plugins</groupId>
      <artifactId>maven-dependency-plugin</artifactId>
      <version>3.8.1</version>
    </plugin>
  </plugins></pluginManagement></build>
</project>
EOF
}

s3proxy() {
  local want="s3proxy:$S3PROXY_VERSION" dir="$SEED/s3proxy"
  if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$want" ]; then
    log "s3proxy: cached"; return 0
  fi
  log "s3proxy: fetching org.gaul:s3proxy:$S3PROXY_VERSION:jar:jar-with-dependencies"
  write_pom s3proxy ""
  rm -rf "$dir.new"
  mvn -B -f "$SEED/s3proxy-pom.xml" dependency:copy \
      -Dartifact="org.gaul:s3proxy:$S3PROXY_VERSION:jar:jar-with-dependencies" \
      -DoutputDirectory="$dir.new" >"$SEED/mvn-s3proxy.log" 2>&1 \
    || { tail -n 30 "$SEED/mvn-s3proxy.log" >&2; die "mvn could not fetch s3proxy (log: $SEED/mvn-s3proxy.log)"; }
  [ -s "$dir.new/s3proxy-$S3PROXY_VERSION-jar-with-dependencies.jar" ] || die "the s3proxy jar is missing after mvn"
  echo "$want" >"$dir.new/.complete"
  rm -rf "$dir"; mv "$dir.new" "$dir"
  log "s3proxy: $dir"
}

sink_plugin() {
  local dir="$PLUGINS/seed-s3-sink" src="$HERE/connector/src/main/java" want build f
  # The plugin is rebuilt when the connector's sources or the versions change.
  want="commons:$AIVEN_COMMONS_VERSION awssdk:$AWS_SDK_VERSION guava:$GUAVA_VERSION"
  want="$want src:$(cat "$src"/pgcdc/seed/s3/*.java | sha256sum | cut -c1-16)"
  if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$want" ]; then
    log "plugin: cached ($(find "$dir" -name '*.jar' | wc -l) jars)"; return 0
  fi
  log "plugin: resolving io.aiven:commons-for-apache-kafka-connect:$AIVEN_COMMONS_VERSION" \
      "and software.amazon.awssdk:s3:$AWS_SDK_VERSION"
  # Confluent's kafka-connect-avro-data (a runtime dependency of the Aiven library, used by its
  # Avro and Parquet writers only) is on Confluent's repository, not on Maven Central: excluded,
  # so format.output.type=avro|parquet fails (README.md). The worker provides Kafka and slf4j.
  write_pom plugin "    <dependency>
      <groupId>io.aiven</groupId><artifactId>commons-for-apache-kafka-connect</artifactId>
      <version>$AIVEN_COMMONS_VERSION</version>
      <exclusions>
        <exclusion><groupId>io.confluent</groupId><artifactId>*</artifactId></exclusion>
        <exclusion><groupId>org.apache.kafka</groupId><artifactId>*</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>software.amazon.awssdk</groupId><artifactId>s3</artifactId><version>$AWS_SDK_VERSION</version>
      <exclusions>
        <exclusion><groupId>software.amazon.awssdk</groupId><artifactId>netty-nio-client</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <!-- The Aiven library's template parser needs Guava, which its pom leaves out. -->
      <groupId>com.google.guava</groupId><artifactId>guava</artifactId><version>$GUAVA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>software.amazon.awssdk</groupId><artifactId>apache-client</artifactId>
      <version>$AWS_SDK_VERSION</version>
    </dependency>"
  rm -rf "$dir.new"
  mvn -B -f "$SEED/plugin-pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$dir.new" >"$SEED/mvn-plugin.log" 2>&1 \
    || { tail -n 30 "$SEED/mvn-plugin.log" >&2; die "mvn could not resolve the plugin (log: $SEED/mvn-plugin.log)"; }
  [ -f "$dir.new/commons-for-apache-kafka-connect-$AIVEN_COMMONS_VERSION.jar" ] || die "the Aiven library is missing"
  # One copy of Kafka, slf4j and the native compression libraries: the worker's (a JNI library
  # cannot be loaded by two class loaders).
  for f in "$dir.new"/kafka-clients-*.jar "$dir.new"/connect-*.jar "$dir.new"/slf4j-*.jar \
           "$dir.new"/lz4-java-*.jar "$dir.new"/snappy-java-*.jar "$dir.new"/zstd-jni-*.jar; do
    rm -f "$f"
  done
  log "plugin: compiling the S3 sink task (connector/)"
  build="$SEED/build"
  rm -rf "$build"; mkdir -p "$build/classes/META-INF/services"
  javac --release 17 -nowarn -d "$build/classes" -cp "$CONNECT_LIB/*:$dir.new/*" \
      "$src"/pgcdc/seed/s3/*.java >"$SEED/javac.log" 2>&1 \
    || { cat "$SEED/javac.log" >&2; die "javac failed (log: $SEED/javac.log)"; }
  # The worker finds plugins with plugin.discovery=service_load: a service manifest.
  echo pgcdc.seed.s3.SeedS3SinkConnector \
    >"$build/classes/META-INF/services/org.apache.kafka.connect.sink.SinkConnector"
  jar cf "$dir.new/seed-s3-sink.jar" -C "$build/classes" .
  echo "$want" >"$dir.new/.complete"
  rm -rf "$dir"; mv "$dir.new" "$dir"
  log "plugin: $(find "$dir" -name '*.jar' | wc -l) jars in $dir"
}

connect_worker
s3proxy
sink_plugin
log "ready: s3proxy=$SEED/s3proxy plugin.path=$PLUGINS"
