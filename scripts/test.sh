#!/usr/bin/env bash
# Start the local services (PostgreSQL, two Kafka brokers), then run the whole test suite.
# Extra arguments go to the test binaries, e.g. scripts/test.sh pgoutput
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/services.sh build-deps
PGCDC_SERVICES_POSTGIS=1 scripts/services.sh start all
# shellcheck source=scripts/env.sh
. scripts/env.sh
# Tests clean up after themselves, but a test that fails or is killed leaves its database and
# slot behind, and an unread slot retains WAL. Drop what earlier runs left (test databases are
# named t_*; nothing else is touched), ending first any connection still streaming such a
# slot (a process an interrupted run left behind).
PGPASSWORD="$PGCDC_TEST_PG_PASSWORD" psql -q -X -h "$PGCDC_TEST_PG_HOST" -p "$PGCDC_TEST_PG_PORT" \
  -U "$PGCDC_TEST_PG_SUPERUSER" -d postgres -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
 WHERE active AND database LIKE 't\_%';
DO $$ BEGIN
  FOR i IN 1..100 LOOP  -- up to 10 s for the walsenders to end
    EXIT WHEN NOT EXISTS (SELECT FROM pg_replication_slots WHERE active AND database LIKE 't\_%');
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
 WHERE NOT active AND database LIKE 't\_%';
SELECT format('DROP DATABASE %I WITH (FORCE)', datname) FROM pg_database WHERE datname LIKE 't\_%' \gexec
SQL
cargo test --all-targets -- --test-threads=4 "$@"
