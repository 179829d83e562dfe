#!/usr/bin/env bash
# The demo: runs pgcdc on the seed's connector config (config/pedidos-cdc.json, unchanged),
# writes sample orders and outbox events to PostgreSQL, and prints the events that arrive in
# Kafka. Sets up everything it needs on a fresh machine (PostgreSQL and Kafka via
# scripts/services.sh, the schema from migrations/, the pgcdc build).
#
# Usage: scripts/demo.sh            (run it again: it resumes from the slot and adds rows)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "Starting PostgreSQL and Kafka (scripts/services.sh)"
scripts/services.sh start pg
scripts/services.sh start kafka
eval "$(scripts/services.sh env)"

say "Building pgcdc (a few minutes the first time: cargo's progress below)"
scripts/services.sh build-deps
cargo build --bin pgcdc
BIN=target/debug/pgcdc

export PGPASSWORD="$PGCDC_TEST_PG_PASSWORD" PGOPTIONS="-c client_min_messages=warning"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h "$PGCDC_TEST_PG_HOST" -p "$PGCDC_TEST_PG_PORT" -U "$PGCDC_TEST_PG_SUPERUSER" -d loja)
say "Applying migrations/ to database loja"
for f in migrations/*.sql; do "${PSQL[@]}" -f "$f"; done

mkdir -p target/demo
LOG=target/demo/pgcdc.log
# pgcdc refuses to go on when the offsets say it was streaming but the slot is gone (the changes
# in between would be lost). For the demo, start over instead: a new slot and a new snapshot.
if [ -f target/demo/offsets.json ] \
   && [ -z "$("${PSQL[@]}" -Atc "SELECT 1 FROM pg_replication_slots WHERE slot_name = 'debezium_pedidos'")" ]; then
  say "The demo's slot debezium_pedidos is gone (dropped?): starting over with a new slot and snapshot"
  mv target/demo/offsets.json "target/demo/offsets.json.old"
fi
say "Running: pgcdc run --config config/pedidos-cdc.json --set <connection keys>   (log: $LOG)"
PGCDC_LOG=info "$BIN" run --config config/pedidos-cdc.json \
  --set database.hostname="$PGCDC_TEST_PG_HOST" \
  --set database.port="$PGCDC_TEST_PG_PORT" \
  --set database.user="$PGCDC_TEST_PG_SUPERUSER" \
  --set database.password="$PGCDC_TEST_PG_PASSWORD" \
  --set bootstrap.servers="$PGCDC_TEST_KAFKA" \
  --set offset.storage.file.filename=target/demo/offsets.json \
  >"$LOG" 2>&1 &
PID=$!
trap 'kill -TERM $PID 2>/dev/null || true' EXIT

# Wait (with a timeout) until pgcdc is streaming.
for _ in $(seq 1 300); do
  if grep -q "streaming started" "$LOG"; then break; fi
  if ! kill -0 $PID 2>/dev/null; then cat "$LOG"; echo "pgcdc exited early" >&2; exit 1; fi
  sleep 0.1
done
grep -q "streaming started" "$LOG" || { cat "$LOG"; echo "pgcdc did not start streaming within 30 s" >&2; exit 1; }
grep -E "INFO" "$LOG" | sed 's/\x1b\[[0-9;]*m//g' | cut -c28- | sed 's/^/  /'

say "Writing sample data: an order and its outbox event in one transaction, an update, a delete"
RUN=$(date +%s)
"${PSQL[@]}" <<SQL
BEGIN;
INSERT INTO pedidos (cliente_id, total) VALUES (42, 199.90);
INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
  VALUES (gen_random_uuid(), 'pedido', currval('pedidos_id_seq')::text, 'PedidoCriado',
          jsonb_build_object('pedido', currval('pedidos_id_seq'), 'cliente', 42, 'total', 199.90, 'run', $RUN));
COMMIT;
UPDATE pedidos SET status = 'pago' WHERE id = currval('pedidos_id_seq');
INSERT INTO pedidos (cliente_id, total) VALUES (7, 5.00);
DELETE FROM pedidos WHERE id = currval('pedidos_id_seq');
SQL

show() {
  local topic=$1 count=$2
  say "Topic $topic (last $count records: key | value payload | headers)"
  kcat -b "$PGCDC_TEST_KAFKA" -C -t "$topic" -o "-$count" -e -q \
    -f 'key:     %k\nvalue:   %s\nheaders: %h\n\n' 2>/dev/null |
    if command -v python3 >/dev/null 2>&1; then
      python3 -c '
import json, sys
for line in sys.stdin:
    line = line.rstrip("\n")
    for tag in ("key:     ", "value:   "):
        if line.startswith(tag):
            body = line[len(tag):]
            try:
                doc = json.loads(body)
                if isinstance(doc, dict) and "payload" in doc:
                    doc = doc["payload"]
                line = tag + json.dumps(doc, ensure_ascii=False)
            except ValueError:
                line = tag + (body or "(null: tombstone)")
    print(line)'
    else
      cat
    fi
}

# Wait until Kafka has the records (pgcdc confirms the slot only after they are acknowledged).
END_LSN=$("${PSQL[@]}" -Atc "SELECT pg_current_wal_insert_lsn()")
for _ in $(seq 1 300); do
  OK=$("${PSQL[@]}" -Atc "SELECT confirmed_flush_lsn >= '$END_LSN' FROM pg_replication_slots WHERE slot_name = 'debezium_pedidos'")
  [ "$OK" = t ] && break
  sleep 0.1
done
if [ "$OK" != t ]; then
  say "pgcdc has not confirmed these writes within 30 s: it may still be reading the WAL its slot retained since the last run (see $LOG); the records below can be older ones"
fi
show loja.public.pedidos 5
show outbox.event.pedido 1

say "Replication slot (confirmed_flush_lsn moves only after Kafka acknowledged every record)"
"${PSQL[@]}" -c "SELECT slot_name, confirmed_flush_lsn, pg_current_wal_insert_lsn() AS current_lsn FROM pg_replication_slots WHERE slot_name = 'debezium_pedidos'"

say "Stopping pgcdc (SIGTERM: drain, final status update, exit 0)"
kill -TERM $PID
wait $PID && echo "  pgcdc exited with status 0"
trap - EXIT
tail -n 2 "$LOG" | sed 's/\x1b\[[0-9;]*m//g' | cut -c28- | sed 's/^/  /'
