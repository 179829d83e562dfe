-- Differential harness, workload "ddl", part 1: pgcdc's schema capture (its event triggers
-- also run under Debezium: their logical messages reach both sides' <prefix>.message topic),
-- a table whose columns change while streaming, and one that does not. Run with
-- table.exclude.list=pgcdc.schema_state, as docs/schema-changes.md tells Debezium users.
\ir ../../../src/pg/schema_capture.sql
CREATE TABLE evolving (id int PRIMARY KEY, a int, b text, c numeric(6,2));
INSERT INTO evolving VALUES (1, 1, 'snap', 1.5);
CREATE TABLE steady (id int PRIMARY KEY, v text);
INSERT INTO steady VALUES (1, 'snap');
