#!/usr/bin/env bash
# The PostgreSQL version matrix: the conformance cases and the core integration tests against
# PostgreSQL 14, 16, 17 and 18 (servers from npm, see scripts/services.sh), one server at a
# time; the full suite runs against Debian's 15 (scripts/test.sh).
#
# Usage: scripts/test-matrix.sh [VERSION...]     (default: 14 16 17 18)
#
# Per version: start its server (scripts/services.sh start pgNN; installs it on first use),
# drop what an earlier run left on it (t_* databases and their slots), run the selected tests
# of the integration binary with PGCDC_TEST_PG_* pointing at that server, stop it. Kafka must
# be running (scripts/test.sh starts it; this script starts it too). Prints one line per
# version with its test counts and time, and fails when any version fails.
# Selected tests: the conformance cases with text and binary tuples; core streaming (records
# with transaction metadata, logical messages, types, the reselect post-processor); snapshots
# (serial and parallel, then streaming, an interrupted one resumed, restarts during one);
# offsets kept across a restart; the outbox EventRouter; large transactions streamed
# (pgcdc.pgoutput.streaming); the estate tests (failover slots).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(14 16 17 18)
TESTS=(
  conformance::
  records::transaction_metadata_brackets_each_transaction_and_orders_its_events
  records::a_transactional_logical_message_counts_in_the_transaction_metadata
  records::propagated_types_of_domains_enums_and_enum_arrays
  records::reselect_post_processor_fills_unchanged_toasted_values
  records::heartbeats_never_confirm_records_kafka_has_not_acknowledged
  snapshot::snapshot_then_stream_has_no_gap_and_no_duplicate
  snapshot::a_parallel_snapshot_then_stream_has_no_gap_and_no_duplicate
  snapshot::an_interrupted_snapshot_resumes_where_it_was
  snapshot::restarts_during_the_snapshot_keep_each_keys_versions_in_commit_order
  offsets::offsets_in_a_topic_are_connects_bytes_on_connects_partition_and_survive_a_restart
  outbox::
  streaming::
  estate::
  schema_changes::ddl_of_captured_tables_is_published_in_order_with_its_rows_and_nothing_else
  schema_changes::a_change_to_a_partitioned_table_reaches_its_captured_partitions
  schema_changes::schema_capture_install_is_idempotent_refuses_a_non_superuser_and_uninstalls
  schema_changes::exactly_once_writes_the_schema_change_in_the_transaction_of_its_rows
)

scripts/services.sh start kafka
cargo test --test integration --no-run 2>&1 | tail -n 1
summary=()
failed=0
for v in "${VERSIONS[@]}"; do
  svc=pg$v
  scripts/services.sh start "$svc"
  env_text=$(scripts/services.sh env "$svc")
  eval "$env_text"
  # npm's server builds have no PostGIS: the conformance cases that need it run on pg only.
  export PGCDC_TEST_PG_NO_POSTGIS=1
  PGPASSWORD="$PGCDC_TEST_PG_PASSWORD" psql -q -X -h "$PGCDC_TEST_PG_HOST" -p "$PGCDC_TEST_PG_PORT" \
    -U "$PGCDC_TEST_PG_SUPERUSER" -d postgres -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE active AND database LIKE 't\_%';
SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
 WHERE NOT active AND database LIKE 't\_%';
SELECT format('DROP DATABASE %I WITH (FORCE)', datname) FROM pg_database WHERE datname LIKE 't\_%' \gexec
SQL
  server=$(PGPASSWORD="$PGCDC_TEST_PG_PASSWORD" psql -X -At -h "$PGCDC_TEST_PG_HOST" \
    -p "$PGCDC_TEST_PG_PORT" -U "$PGCDC_TEST_PG_SUPERUSER" -d postgres -c 'SHOW server_version')
  echo "=== PostgreSQL $server (127.0.0.1:$PGCDC_TEST_PG_PORT) ==="
  start=$(date +%s)
  log=target/test-matrix-pg$v.log
  rc=0
  cargo test --test integration -- --test-threads=4 "${TESTS[@]}" >"$log" 2>&1 || rc=$?
  result=$(grep -E '^test result:' "$log" | tail -n 1 || true)
  grep -E '^test .* \.\.\. (FAILED|ok)$' "$log" | sed 's/^/  /' || true
  if [ "$rc" != 0 ]; then
    failed=1
    grep -E -A 20 '^---- .* stdout ----' "$log" | head -n 80 || true
  fi
  summary+=("PostgreSQL $server: ${result:-no result (see $log)} in $(( $(date +%s) - start )) s")
  scripts/services.sh stop "$svc"
done
printf '%s\n' "${summary[@]}"
exit "$failed"
