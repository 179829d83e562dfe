#!/usr/bin/env bash
# Capture real pgoutput (protocol version 1) messages from a local PostgreSQL server into
# tests/fixtures/pgoutput/frames.txt, the fixture of the decoder tests in
# src/pg/pgoutput/tests.rs (and the seed corpus of fuzz/).
#
# Usage: scripts/capture-pgoutput.sh [output-file]
#   Connection: PGHOST (127.0.0.1), PGPORT (54329), PGUSER (postgres), PGPASSWORD (postgres).
#   The server needs wal_level=logical and a superuser (scripts/services.sh start pg).
#
# What it does: creates a scratch database, a publication FOR ALL TABLES and a logical slot
# with plugin pgoutput, runs a fixed workload, reads the slot with
#   pg_logical_slot_peek_binary_changes(slot, NULL, NULL, 'proto_version', '1',
#                                       'publication_names', pub, 'messages', 'true')
# (each row's `data` is exactly one pgoutput message, as the decoder receives it), writes one
# line per message as "<lsn>\t<hex>", then drops the slot, publication, origin and database.
#
# The workload (expected messages in brackets):
#   1. one transaction inserting three rows of `kinds` (int, text, numeric(10,2), NULL, bytea,
#      jsonb, int[], text[], varchar(20), enum) and one row of `full_rows`
#      [B, Y (enum mood), R kinds, I, I, I, R full_rows, I, C]
#   2. UPDATE kinds, non-key column, REPLICA IDENTITY DEFAULT       [B, U (no old tuple), C]
#   3. UPDATE kinds changing the primary key                        [B, U (old 'K' tuple), C]
#   4. UPDATE full_rows (REPLICA IDENTITY FULL)                     [B, U (old 'O' tuple), C]
#   5. UPDATE docs leaving a TOASTed text column unchanged          [B, R docs, U ('u' value), C]
#      (the docs row is inserted before the slot exists, so its large value is not in the file)
#   6. DELETE FROM kinds (default identity)                         [B, D ('K'), C]
#   7. DELETE FROM full_rows (FULL identity)                        [B, D ('O'), C]
#   8. TRUNCATE parent, child RESTART IDENTITY CASCADE              [B, R parent, R child, T, C]
#   9. transactional pg_logical_emit_message                        [B, M (transactional), C]
#  10. non-transactional pg_logical_emit_message (bytea content)    [M]
#  11. INSERT from a session with a replication origin set up       [B, O, I, C]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
OUT="${1:-$ROOT/tests/fixtures/pgoutput/frames.txt}"

export PGHOST="${PGHOST:-127.0.0.1}"
export PGPORT="${PGPORT:-54329}"
export PGUSER="${PGUSER:-postgres}"
export PGPASSWORD="${PGPASSWORD:-postgres}"

DB=pgcdc_capture
SLOT=pgcdc_capture_slot
PUB=pgcdc_capture_pub
ORIGIN=pgcdc_capture_origin

log() { printf 'capture-pgoutput: %s\n' "$*" >&2; }
die() { printf 'capture-pgoutput: ERROR: %s\n' "$*" >&2; exit 1; }

psql_admin() { psql -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }
psql_db() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

cleanup() {
  # The slot lives in the scratch database: drop it first, or DROP DATABASE fails.
  psql -X -q -d postgres -At -c \
    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$SLOT'" \
    >/dev/null 2>&1 || true
  psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  psql -X -q -d postgres -At -c \
    "SELECT pg_replication_origin_drop('$ORIGIN') FROM pg_replication_origin WHERE roname = '$ORIGIN'" \
    >/dev/null 2>&1 || true
}

command -v psql >/dev/null || die "psql not found"
[[ "$(psql_admin -At -c 'SHOW wal_level')" == logical ]] || die "wal_level is not logical"

cleanup # leftovers of an interrupted run
trap cleanup EXIT

log "creating database $DB, schema, publication $PUB"
psql_admin -c "CREATE DATABASE $DB"
psql_db <<'SQL'
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE kinds (
    id     integer PRIMARY KEY,
    txt    text,
    amount numeric(10,2),
    maybe  integer,
    blob   bytea,
    doc    jsonb,
    ints   integer[],
    tags   text[],
    code   varchar(20),
    feel   mood
);
CREATE TABLE full_rows (id integer PRIMARY KEY, label text, qty integer);
ALTER TABLE full_rows REPLICA IDENTITY FULL;
CREATE TABLE docs (id integer PRIMARY KEY, body text, note text);
CREATE TABLE parent (id serial PRIMARY KEY, name text);
CREATE TABLE child (id serial PRIMARY KEY, parent_id integer REFERENCES parent (id));
SQL
psql_db -c "CREATE PUBLICATION $PUB FOR ALL TABLES"

# The TOASTed row is written before the slot exists: only the later UPDATE is decoded, so the
# fixture shows the 'u' (unchanged TOAST) value without carrying the large value itself.
# 200 md5 strings are ~6.4 KB of text that pglz cannot compress enough: stored out of line.
psql_db <<'SQL'
INSERT INTO docs (id, body, note)
SELECT 1, string_agg(md5(random()::text), ''), 'first' FROM generate_series(1, 200);
SQL
toasted=$(psql_db -At -c \
  "SELECT count(*) FROM pg_toast.pg_toast_$(psql_db -At -c "SELECT 'docs'::regclass::oid")")
[[ "$toasted" -gt 0 ]] || die "docs.body was not TOASTed out of line"
log "docs.body stored in $toasted TOAST chunk(s)"

log "creating logical slot $SLOT (pgoutput)"
psql_db -At -c "SELECT lsn FROM pg_create_logical_replication_slot('$SLOT', 'pgoutput')" >/dev/null

log "running the workload"
psql_db >/dev/null <<'SQL'
BEGIN;
INSERT INTO kinds VALUES
  (1, 'hello', 12.50, NULL, '\x00ff10'::bytea, '{"a": 1, "b": [true, null]}', '{1,2,3}',
   '{"x y","z"}', 'ABC-1', 'happy'),
  (2, 'two', -0.01, 7, '\x'::bytea, '[]', '{}', '{NULL}', '', 'sad'),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO full_rows VALUES (1, 'widget', 5);
COMMIT;

UPDATE kinds SET txt = 'changed' WHERE id = 1;
UPDATE kinds SET id = 20 WHERE id = 2;
UPDATE full_rows SET qty = 6 WHERE id = 1;
UPDATE docs SET note = 'edited' WHERE id = 1;
DELETE FROM kinds WHERE id = 3;
DELETE FROM full_rows WHERE id = 1;
TRUNCATE parent, child RESTART IDENTITY CASCADE;

BEGIN;
SELECT pg_logical_emit_message(true, 'pgcdc.test', 'inside a transaction');
COMMIT;

SELECT pg_logical_emit_message(false, 'pgcdc.raw', '\x00ff7f80'::bytea);
SQL

psql_db -v origin="$ORIGIN" >/dev/null <<'SQL'
SELECT pg_replication_origin_create(:'origin');
SELECT pg_replication_origin_session_setup(:'origin');
BEGIN;
SELECT pg_replication_origin_xact_setup('0/5A5A5A5', now());
INSERT INTO kinds (id, txt) VALUES (4, 'from origin');
COMMIT;
SELECT pg_replication_origin_session_reset();
SQL

log "reading the slot"
server_version=$(psql_admin -At -c 'SHOW server_version')
peek="pg_logical_slot_peek_binary_changes('$SLOT', NULL, NULL,
        'proto_version', '1', 'publication_names', '$PUB', 'messages', 'true')"
rows=$(psql_db -At -F $'\t' -c "SELECT lsn, xid, encode(data, 'hex') FROM $peek")
[[ -n "$rows" ]] || die "the slot returned no changes"

# Sanity check: every message from a 'B' (42) to its 'C' (43) row carries, in the xid column
# of the peek, the xid that the Begin message itself holds (bytes 17..20 of its payload).
awk -F '\t' '
  function hex2dec(h,   i, v) { v = 0; for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1; return v }
  substr($3, 1, 2) == "42" { cur = hex2dec(substr($3, 35, 8)); if (cur != $2) { print "Begin xid " cur " != peek xid " $2; bad = 1 } }
  cur != "" && $2 != cur { print "row " NR " xid " $2 " != Begin xid " cur; bad = 1 }
  substr($3, 1, 2) == "43" { cur = "" }
  END { exit bad }' <<<"$rows" >&2 || die "xid check failed"

mkdir -p "$(dirname "$OUT")"
{
  printf '# Real pgoutput messages (proto_version 1), one per line as <lsn>\\t<hex>, captured by\n'
  printf '# scripts/capture-pgoutput.sh from PostgreSQL %s with\n' "$server_version"
  printf "# pg_logical_slot_peek_binary_changes('%s', NULL, NULL, 'proto_version', '1', 'publication_names', '%s', 'messages', 'true').\n" "$SLOT" "$PUB"
  printf '# Workload and expected messages: see the header of scripts/capture-pgoutput.sh.\n'
  cut -f 1,3 <<<"$rows"
} >"$OUT"
log "wrote $(grep -vc '^#' "$OUT") messages to $OUT"
