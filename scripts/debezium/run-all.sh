#!/usr/bin/env bash
# The differential harness once with the plain connector config (pgcdc reading binary tuples)
# and once per extra config in scripts/debezium/configs/*.conf (one k=v per line, # comments;
# avro.conf also with outbox.conf and with unwrap.conf), then the switch run
# (scripts/debezium/switch.sh). Exit 0 only when every pass has every record identical or
# listed in deliberate.tsv and every check of the switch run passed. Each pass's run directory (reports,
# diffs.jsonl, pgcdc.log) is kept as target/debezium/run-<pass>/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rc=0
summary=()
run_pass() {
  local name=$1 extra=$2 pgcdc_only=${3:-} workload=${4:-core} status=0
  echo "== differential pass: $name${pgcdc_only:+ (pgcdc: $pgcdc_only)}"
  # The plain pass also compares the REST APIs (rest-compare.sh).
  local rest=0; [ "$name" = plain ] && rest=1
  # The pass's own output is kept too, so that a failure's cause (a wait that timed out, a
  # connector that failed) is in the details at the end, where a log cut to its tail shows it.
  local out="target/debezium/output-$name.txt"
  set +e
  DBZ_REST_COMPARE=$rest DBZ_EXTRA_CONFIG="$extra" DBZ_PGCDC_SET="$pgcdc_only" \
    DBZ_WAIT_SKIP="${wait_skip:-}" DBZ_WAIT_ADD="${wait_add:-}" DBZ_TOPICS_3="${topics_3:-}" \
    scripts/debezium/run.sh "$workload" 2>&1 | tee "$out"
  status=${PIPESTATUS[0]}
  set -e
  summary+=("$name: $(grep -m1 '^records compared' target/debezium/run/report.txt 2>/dev/null || echo 'no report') (exit $status)")
  # Keep each pass's reports, differing records and pgcdc log (the next pass reuses run/).
  rm -rf "target/debezium/run-$name" && cp -r target/debezium/run "target/debezium/run-$name" || true
  mkdir -p "target/debezium/run-$name" && mv "$out" "target/debezium/run-$name/output.txt"
  [ "$status" = 0 ] || { rc=1; failed+=("$name"); }
}
failed=()
# The plain pass runs pgcdc with binary tuples (pgcdc.pgoutput.binary=true): every streamed
# value is read from its binary send format and must equal Debezium's, read from text. The
# other passes use text tuples, pgcdc's default.
run_pass plain "" "pgcdc.pgoutput.binary=true"
conf() { cat "$@" | grep -v '^[[:space:]]*#' | sed '/^[[:space:]]*$/d'; }
# A conf's `#! wait-skip=` and `#! wait-add=` lines name the topics its transforms route away,
# `#! topics-3=` the topics they spread over three partitions.
for f in scripts/debezium/configs/*.conf; do
  wait_skip=$(sed -n 's/^#! wait-skip=//p' "$f") wait_add=$(sed -n 's/^#! wait-add=//p' "$f")
  topics_3=$(sed -n 's/^#! topics-3=//p' "$f")
  run_pass "$(basename "$f" .conf)" "$(conf "$f")"
done
wait_skip='' wait_add='' topics_3=''
# The types Debezium maps only under include.unknown.datatypes=true (workload "unknown").
run_pass unknown-types "include.unknown.datatypes=true" "" unknown
# Signals and an incremental snapshot (workload "incremental"): the same execute-snapshot row
# reaches both connectors through the WAL; each reads the tables in chunks between its own
# watermarks, and every record (rows, the signal table's rows with both sides' watermarks, the
# notifications) must match.
run_pass incremental "$(printf '%s\n' snapshot.mode=no_data signal.data.collection=public.dbz_signal incremental.snapshot.chunk.size=300 notification.enabled.channels=sink,log notification.sink.topic.name=diff.notifications)" "" incremental
# Partitioned tables with publish.via.partition.root=true (workload "partitions"): the
# partitions' changes (updates under each replica identity, a row moved to another partition,
# a partition attached and one detached while streaming) under the root table's topic. The
# leaves are left out with table.exclude.list: Debezium also snapshots them under their own
# names, into topics that then never see a change, where pgcdc snapshots the root only
# (docs/differences.md).
wait_skip='diff\.public\.events_20[0-9]+'
run_pass partitions "$(printf '%s\n' publish.via.partition.root=true 'table.exclude.list=public.events_20.*')" "" partitions
wait_skip=''
# Schema changes (workload "ddl"): columns added, dropped, renamed and retyped between writes,
# in and across transactions, with pgcdc's schema capture installed (its logical messages reach
# both sides' <prefix>.message topic). Once with include.schema.changes off on both sides, once
# on for pgcdc alone: the row records must stay identical either way (the schema change topic,
# <prefix> itself, is not compared: Debezium's PostgreSQL connector has none).
run_pass ddl "table.exclude.list=pgcdc.schema_state" "" ddl
run_pass ddl-events "table.exclude.list=pgcdc.schema_state" "include.schema.changes=true" ddl
# pgcdc's schema change records of that pass (topic "diff", left by the cleanup, which deletes
# "diff.*"), read with Debezium's own code: their schemas must equal the ones Debezium's
# SchemaFactory builds, and every value must validate against them (the workload makes 7).
echo "== schema change records read with Debezium's code"
scc_status=0
java -Xmx256m -cp "target/debezium/connect-lib/*:target/debezium/plugins/debezium-connector-postgres/*" \
  scripts/debezium/SchemaChangeCheck.java "${PGCDC_TEST_KAFKA:-127.0.0.1:59092}" diff diff 7 2>/dev/null \
  | tee target/debezium/schema-change-check.txt || scc_status=$?
summary+=("schema-change-check: $(tail -n 1 target/debezium/schema-change-check.txt) (exit $scc_status)")
[ "$scc_status" = 0 ] || { rc=1; failed+=("schema-change-check"); }
# Avro with the transforms' schemas too: EventRouter (expanded JSON payload, headers) and
# ExtractNewRecordState, and with transaction metadata (the envelope's transaction block and
# the transaction topic). Not with metadata.conf's source-type propagation: Debezium's side fails
# there, since Apicurio cannot run its compatibility rule on a second version of a schema that
# holds a NaN default.
# The unwrap pass also turns on enhanced.avro.schema.support on both sides (it must change
# nothing for these schemas).
enhanced=$'key.converter.enhanced.avro.schema.support=true\nvalue.converter.enhanced.avro.schema.support=true'
run_pass avro-outbox "$(conf scripts/debezium/configs/avro.conf scripts/debezium/configs/outbox.conf)"
run_pass avro-transactions "$(conf scripts/debezium/configs/avro.conf)"$'\n'"provide.transaction.metadata=true"
run_pass avro-unwrap "$(conf scripts/debezium/configs/avro.conf scripts/debezium/configs/unwrap.conf)"$'\n'"$enhanced"
# Switching from Debezium to pgcdc and back on one slot and one offsets topic.
echo "== switch run"
switch_status=0
scripts/debezium/switch.sh || switch_status=$?
count() { grep -c "$1" target/debezium/switch/report.txt 2>/dev/null || true; }
summary+=("switch: $(count ' ok$') of 4 phases ok, $(count '^FAILED') failures (exit $switch_status)")
[ "$switch_status" = 0 ] || rc=1
# What a failed pass found, where a CI log that keeps only its tail still shows it: the topics
# whose record counts differ, the records on one side only, and pgcdc's warnings and errors.
details() {
  local dir=$1
  awk 'NR > 1 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $2 != $3' "$dir/report.txt" | head -n 10
  sed -n -e '/repeat the record before them/,/^$/p' -e '/^records on one side only/,/^$/p' "$dir/report.txt" | head -n 40
  grep -A2 '^rest: DIFFERENT' "$dir/rest-compare.txt" | head -n 12
  grep -E ' (WARN|ERROR) ' "$dir/pgcdc.log" | grep -v 'cannot convert a value' | cut -c1-300 | head -n 15
  # Differences in paired records that deliberate.tsv does not list, and the first examples.
  sed -n '/^differences by field path/,/^$/p' "$dir/report.txt" | grep -v '\[deliberate' | head -n 12
  sed -n '/^first example of each/,/^$/p' "$dir/report.txt" | head -n 30
  # The end of the pass's own output: the harness's error, when it stopped on one.
  echo "-- the pass's last lines"
  grep -v '^[[:space:]]*$' "$dir/output.txt" | tail -n 15 | cut -c1-300
}
for name in "${failed[@]}"; do
  echo "== $name failed: details (target/debezium/run-$name)"
  # A file a pass did not get to write, or a grep that finds nothing, must not end the script
  # before the summary.
  details "target/debezium/run-$name" 2>/dev/null || true
done
printf '%s\n' "${summary[@]}"
exit "$rc"
