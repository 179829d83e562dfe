-- Differential harness, workload "incremental", part 1: tables an incremental snapshot reads
-- (an integer key over several chunks, a composite text and integer key, a uuid key, an
-- empty table, a table without a primary key) and the signal table. The connectors start
-- with snapshot.mode=no_data: every row below reaches Kafka through the incremental snapshot.
CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048));
CREATE TABLE t_int (id int PRIMARY KEY, n numeric(10,2), t text, ts timestamptz, b bytea, j jsonb);
INSERT INTO t_int SELECT g, g / 7.0, 'row ' || g, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 minute',
  decode(md5(g::text), 'hex'), jsonb_build_object('g', g) FROM generate_series(-50, 1200) g;
CREATE TABLE t_comp (region text, n int, v text, PRIMARY KEY (region, n));
INSERT INTO t_comp SELECT r, g, r || g FROM unnest(ARRAY['eu', 'us', 'zé''q']) r, generate_series(1, 150) g;
CREATE TABLE t_uuid (id uuid PRIMARY KEY, v int);
INSERT INTO t_uuid SELECT md5(g::text)::uuid, g FROM generate_series(1, 250) g;
CREATE TABLE t_empty (id int PRIMARY KEY);
CREATE TABLE t_nokey (v int);
INSERT INTO t_nokey VALUES (1), (2);
