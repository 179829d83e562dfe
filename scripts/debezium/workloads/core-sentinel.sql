-- Differential harness, workload "core", part 3: the sentinel. run.sh runs this inside one
-- transaction (with a logical message) and waits until every table's topic, on both sides,
-- has a record of that transaction. It must write one row to every table of core-setup.sql.
INSERT INTO t_outbox VALUES ('99999999-9999-9999-9999-999999999999', 'order', 'sentinel', 'Sentinel', '{"id": 999}');
INSERT INTO t_types (t) VALUES ('sentinel');
INSERT INTO t_arrays (at) VALUES ('{sentinel}');
INSERT INTO t_defaults (label) VALUES ('sentinel');
INSERT INTO t_notnull VALUES
  (999, 'sentinel', 0, 0, false, 0, 0, 0, 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-01-03', '03:00:00',
   '2024-01-03 03:00:00', '2024-01-03 03:00:00+00', '\x', '{}', '{}', NULL);
INSERT INTO t_nopk (b) VALUES ('sentinel');
INSERT INTO t_toast (id, small) VALUES (999, 'sentinel');
INSERT INTO t_toast_full (id, small) VALUES (999, 'sentinel');
INSERT INTO t_pk VALUES (999, 'sentinel');
INSERT INTO t_composite VALUES (999, 'sentinel', NULL, NULL);
INSERT INTO t_trunc VALUES (999, 'sentinel');
INSERT INTO t_trunc2 VALUES (999, 'sentinel');
INSERT INTO "CamelCase" VALUES (999, 'sentinel');
INSERT INTO inventory.items VALUES ('sentinel', 0, NULL);
INSERT INTO t_notnull2 VALUES
  (999, 's', 's', 0, 0, 0, '{}', 0, '2024-01-01 00:00:00', '00:00:00', '2024-01-01 00:00:00+00', '{}', '{}');
INSERT INTO t_defaults2 (vc) VALUES ('sentinel');
INSERT INTO t_geo_range (hs) VALUES ('"sentinel"=>"1"');
INSERT INTO t_gis (g) VALUES ('POINT(0 0)');
INSERT INTO t_enum (mood) VALUES ('happy');
