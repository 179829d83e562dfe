-- Differential harness, workload "core", part 2: applied once both connectors stream.
-- Inserts, updates, deletes, primary-key changes, TOAST, truncates, logical messages.

-- Inserts (streaming values of every type; the same edge values as the snapshot rows).
INSERT INTO t_types (b, i2, i4, i8, o, f4, f8, n, n0, n38, nu, t, vc, vcu, c, by, u, j, jb,
                     d, tm, tm3, tm0, ts, ts3, ts0, tstz, tstz3, tstz0)
  SELECT b, i2, i4, i8, o, f4, f8, n, n0, n38, nu, t, vc, vcu, c, by, u, j, jb,
         d, tm, tm3, tm0, ts, ts3, ts0, tstz, tstz3, tstz0 FROM t_types ORDER BY id;
INSERT INTO t_types (f4, f8, nu) VALUES (-0.0, -0.0, -0.0), (1e-45, 5e-324, 0.000001), (16777217, 9007199254740993, 1e30);
INSERT INTO t_types DEFAULT VALUES;
INSERT INTO t_types (nu, n, ts3, ts0, tm3, tstz3) VALUES
  ('0.0', 0.00, 'infinity', '-infinity', '00:00:00.001', 'infinity'),
  ('100.00', -0.00, '1969-12-31 23:59:59.999', 'infinity', '23:59:59.999', '-infinity'),
  ('-0.0', 100, NULL, NULL, NULL, NULL),
  ('1.50', NULL, NULL, NULL, NULL, NULL);
INSERT INTO t_defaults2 DEFAULT VALUES;
INSERT INTO t_defaults2 (nu, fnan, finf, ts3, tm3, tstz3, arr, tarr, vc, neg, expr, b2, u, d, ts, j)
  VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
DELETE FROM t_notnull2 WHERE id = 2;

INSERT INTO t_arrays (ab, ai2, ai4, ai8, af4, af8, an, anu, at, avc, ac, aby, au, aj, ajb, ad, atm, ats, atstz)
  SELECT ab, ai2, ai4, ai8, af4, af8, an, anu, at, avc, ac, aby, au, aj, ajb, ad, atm, ats, atstz FROM t_arrays ORDER BY id;

INSERT INTO t_defaults DEFAULT VALUES;
INSERT INTO t_defaults (flag, qty, label, price, u, j, created) VALUES (false, NULL, NULL, NULL, NULL, NULL, '2022-02-02 02:02:02+00');

INSERT INTO t_notnull VALUES
  (3, 'three', 3, 3, true, 3.5, 3.25, 3.125, 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-01-03', '03:00:00',
   '2024-01-03 03:00:00', '2024-01-03 03:00:00+00', '\x03', '{"three": 3}', '{3}', 'x');

INSERT INTO t_nopk VALUES (3, 'three', 3.00, now()), (NULL, NULL, NULL, NULL);
INSERT INTO "CamelCase" VALUES (2, 'Two');
INSERT INTO inventory.items VALUES ('SKU-3', 1, 99.9999);

-- Updates: non-key columns, to NULL, from NULL, no-op.
UPDATE t_types SET t = 'updated', n = 1.01, tstz = '2025-05-05 05:05:05.5+00', jb = '{"u": true}' WHERE id = 1;
UPDATE t_types SET b = NULL, i4 = NULL, d = NULL, ts = NULL, by = NULL WHERE id = 2;
UPDATE t_types SET b = true, i4 = 1, d = '2025-01-01', ts = '2025-01-01 00:00:00', by = '\x11' WHERE id = 4;
UPDATE t_types SET i2 = i2 WHERE id = 6;
UPDATE t_arrays SET ai4 = '{4,5,6}', at = '{"updated"}' WHERE id = 1;
UPDATE t_defaults SET qty = NULL, label = NULL, flag = false WHERE id = 1;
UPDATE t_notnull SET opt = 'changed', nn_int = 10 WHERE id = 1;
UPDATE t_nopk SET b = 'uno' WHERE a = 1;
UPDATE t_nopk SET c = 9.99 WHERE a = 2;
-- An update that changes nothing (REPLICA IDENTITY FULL: before = after); dropped under
-- skip.messages.without.change (metadata.conf), a u record otherwise.
UPDATE t_nopk SET b = b WHERE a = 1;
UPDATE "CamelCase" SET "MixedCol" = 'changed' WHERE "Id" = 1;
UPDATE inventory.items SET qty = qty + 1;

-- TOAST: update a small column; the big ones are unchanged (placeholder unless FULL identity).
UPDATE t_toast SET small = 'changed' WHERE id = 1;
UPDATE t_toast_full SET small = 'changed' WHERE id = 1;
-- ... then change a big one, then insert a new big row and delete it.
UPDATE t_toast SET big = (SELECT string_agg(md5((i * 7)::text), '') FROM generate_series(1, 300) i) WHERE id = 1;
INSERT INTO t_toast VALUES (2, 's2', (SELECT string_agg(md5((i * 3)::text), '') FROM generate_series(1, 300) i), NULL, NULL, NULL);
UPDATE t_toast SET small = 's2 changed' WHERE id = 2;
DELETE FROM t_toast WHERE id = 2;

-- Primary-key changes.
UPDATE t_pk SET id = 10 WHERE id = 1;
UPDATE t_pk SET id = 20, v = 'twenty' WHERE id = 2;
UPDATE t_composite SET b = 'z' WHERE a = 1;
UPDATE t_composite SET a = 3, c = '2025-01-01 00:00:00+00' WHERE a = 2;
UPDATE "CamelCase" SET "Id" = 3 WHERE "Id" = 2;

-- Deletes (default identity: before = key + NOT NULL fallbacks; FULL: whole row).
DELETE FROM t_types WHERE id = 3;
DELETE FROM t_arrays WHERE id = 2;
DELETE FROM t_defaults WHERE id = 2;
DELETE FROM t_notnull WHERE id = 2;
DELETE FROM t_nopk WHERE a = 2;
DELETE FROM t_composite WHERE a = 3;
DELETE FROM inventory.items WHERE sku = 'SKU-2';
UPDATE inventory.items SET sku = 'SKU-ü-😀-new' WHERE sku LIKE 'SKU-😀%';

-- A multi-statement transaction across tables, with a logical message inside.
BEGIN;
INSERT INTO t_pk VALUES (30, 'thirty');
UPDATE t_pk SET v = 'ten' WHERE id = 10;
SELECT pg_logical_emit_message(true, 'tx-prefix', 'inside a transaction') \g /dev/null
DELETE FROM t_pk WHERE id = 20;
COMMIT;

-- Logical decoding messages: transactional, non-transactional, binary content, empty.
SELECT pg_logical_emit_message(true, 'app', 'hello') \g /dev/null
SELECT pg_logical_emit_message(false, 'app-nontx', 'not transactional') \g /dev/null
SELECT pg_logical_emit_message(true, 'bin', '\x00ff10'::bytea) \g /dev/null
SELECT pg_logical_emit_message(true, '', '') \g /dev/null

-- Truncates: one table, then two in one statement; then rows again.
TRUNCATE t_trunc;
INSERT INTO t_trunc VALUES (3, 'after truncate');
TRUNCATE t_trunc, t_trunc2;
INSERT INTO t_trunc2 VALUES (2, 'after truncate');

-- hstore, point, ranges, timetz; a quoted-name table.
INSERT INTO t_geo_range (hs, p, r4, ttz, ttz0, tv) VALUES ('"b"=>"2", "a"=>"1", "c"=>NULL', '(3,4)', '(0,10]', '24:00:00-02', '23:59:59.9+00', to_tsvector('simple', 'The quick brown fox, the lazy dog'));
UPDATE t_geo_range SET hs = hs || '"z"=>"26"'::hstore WHERE id = 1;
INSERT INTO "Quoted_"" . Schema"."Quoted_"" . Table" ("Quoted_"" . Text_Column") VALUES ('stream');

-- PostGIS.
INSERT INTO t_gis (g, gp, gg, ga) VALUES ('SRID=4326;LINESTRING(0 0, 1 1)', 'SRID=3187;POINT(1 2)',
  'MULTILINESTRING((0 0, 1 1))', ARRAY['POINT(3 4)'::postgis.geometry]);
UPDATE t_gis SET g = 'POINT EMPTY' WHERE id = 2;

-- Enums.
INSERT INTO t_enum (moods, price) VALUES ('{ok}', 1);
UPDATE t_enum SET mood = 'sad', moods = '{}' WHERE id = 1;
-- A label added while streaming, then used.
ALTER TYPE mood_t ADD VALUE 'great';
INSERT INTO t_enum (mood, moods) VALUES ('great', '{great,sad}');


-- Outbox: insert-then-delete in one transaction, then an insert and an update.
BEGIN;
INSERT INTO t_outbox VALUES ('33333333-3333-3333-3333-333333333333', 'order', 'o-2', 'OrderCreated',
  '{"id": 2, "lines": [{"sku": "c", "qty": 5}], "total": 12.5}');
DELETE FROM t_outbox WHERE id = '33333333-3333-3333-3333-333333333333';
COMMIT;
INSERT INTO t_outbox VALUES ('44444444-4444-4444-4444-444444444444', 'customer', 'c-2', 'CustomerUpdated',
  '{"name": "Bo", "vip": false}');
UPDATE t_outbox SET type = 'CustomerRenamed' WHERE id = '44444444-4444-4444-4444-444444444444';
