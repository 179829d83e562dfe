-- Differential harness, workload "core", part 1: schema and the rows the initial snapshot reads.
-- Applied to a fresh database before either connector starts. Only types pgcdc supports today
-- (docs/configuration.md, "Types handled"). Every table here must also get a row in core-sentinel.sql.
CREATE EXTENSION IF NOT EXISTS pgcrypto;

-- One column per scalar type, all nullable.
CREATE TABLE t_types (
  id      serial PRIMARY KEY,
  b       boolean,
  i2      smallint,
  i4      integer,
  i8      bigint,
  o       oid,
  f4      real,
  f8      double precision,
  n       numeric(10,2),
  n0      numeric(5),
  n38     numeric(38,10),
  nu      numeric,
  t       text,
  vc      varchar(20),
  vcu     varchar,
  c       char(5),
  by      bytea,
  u       uuid,
  j       json,
  jb      jsonb,
  d       date,
  tm      time,
  tm3     time(3),
  tm0     time(0),
  ts      timestamp,
  ts3     timestamp(3),
  ts0     timestamp(0),
  tstz    timestamptz,
  tstz3   timestamptz(3),
  tstz0   timestamptz(0)
);

-- One-dimensional arrays of the same types.
CREATE TABLE t_arrays (
  id      bigserial PRIMARY KEY,
  ab      boolean[],
  ai2     smallint[],
  ai4     integer[],
  ai8     bigint[],
  af4     real[],
  af8     double precision[],
  an      numeric(10,2)[],
  anu     numeric[],
  at      text[],
  avc     varchar(10)[],
  ac      char(3)[],
  aby     bytea[],
  au      uuid[],
  aj      json[],
  ajb     jsonb[],
  ad      date[],
  atm     time[],
  ats     timestamp[],
  atstz   timestamptz[]
);

-- Defaults and NOT NULL: schema "default" values, JsonConverter's null-to-default substitution.
CREATE TABLE t_defaults (
  id      serial PRIMARY KEY,
  flag    boolean NOT NULL DEFAULT true,
  qty     integer DEFAULT 42,
  big     bigint NOT NULL DEFAULT 0,
  small   smallint DEFAULT -7,
  label   text DEFAULT 'abc',
  code    varchar(10) NOT NULL DEFAULT 'x',
  ch      char(4) DEFAULT 'ab',
  price   numeric(8,2) DEFAULT 9.99,
  ratio   double precision DEFAULT 1.5,
  r4      real DEFAULT 0.25,
  d       date DEFAULT '2020-01-02',
  tm      time DEFAULT '12:34:56',
  ts      timestamp DEFAULT '2020-01-02 03:04:05.678',
  tstz    timestamptz DEFAULT '2020-01-02 03:04:05+00',
  created timestamptz NOT NULL DEFAULT now(),
  u       uuid DEFAULT gen_random_uuid(),
  j       jsonb DEFAULT '{"k": 1}',
  bytes   bytea DEFAULT '\x0102'
);

-- NOT NULL without defaults: the fallbacks in a delete's "before" under the default identity.
CREATE TABLE t_notnull (
  id      bigint PRIMARY KEY,
  nn_text text NOT NULL,
  nn_int  integer NOT NULL,
  nn_i2   smallint NOT NULL,
  nn_bool boolean NOT NULL,
  nn_f8   double precision NOT NULL,
  nn_num  numeric(6,2) NOT NULL,
  nn_nu   numeric NOT NULL,
  nn_uuid uuid NOT NULL,
  nn_date date NOT NULL,
  nn_tm   time NOT NULL,
  nn_ts   timestamp NOT NULL,
  nn_tstz timestamptz NOT NULL,
  nn_by   bytea NOT NULL,
  nn_jb   jsonb NOT NULL,
  nn_arr  integer[] NOT NULL,
  opt     text
);

-- More NOT NULL fallbacks.
CREATE TABLE t_notnull2 (
  id       integer PRIMARY KEY,
  nn_vc    varchar(5) NOT NULL,
  nn_c     char(3) NOT NULL,
  nn_f4    real NOT NULL,
  nn_i8    bigint NOT NULL,
  nn_oid   oid NOT NULL,
  nn_j     json NOT NULL,
  nn_n0    numeric(5) NOT NULL,
  nn_ts3   timestamp(3) NOT NULL,
  nn_tm3   time(3) NOT NULL,
  nn_tstz3 timestamptz(3) NOT NULL,
  nn_ab    boolean[] NOT NULL,
  nn_at    text[] NOT NULL
);

-- More defaults: expressions, arrays, special values, precision variants.
CREATE TABLE t_defaults2 (
  id      serial PRIMARY KEY,
  nu      numeric DEFAULT 1.50,
  fnan    double precision DEFAULT 'NaN',
  finf    real DEFAULT '-Infinity',
  ts3     timestamp(3) DEFAULT '2020-01-01 00:00:00.123',
  tm3     time(3) DEFAULT '01:02:03.456',
  tstz3   timestamptz(3) DEFAULT '2020-01-01 00:00:00.1+00',
  arr     integer[] DEFAULT '{1,2}',
  tarr    text[] DEFAULT '{}',
  vc      varchar DEFAULT 'it''s',
  neg     integer DEFAULT -1,
  expr    integer DEFAULT (1 + 2),
  b2      boolean DEFAULT false,
  u       uuid DEFAULT '11111111-1111-1111-1111-111111111111',
  d       date DEFAULT CURRENT_DATE,
  ts      timestamp DEFAULT CURRENT_TIMESTAMP,
  j       json DEFAULT '[]',
  by      bytea NOT NULL DEFAULT '',
  -- Casts of and arithmetic on function calls (Debezium gives them the zero value), and a
  -- keyword sum (no default).
  dnow    date DEFAULT now()::date,
  tnow    time DEFAULT now()::time,
  tsnow   timestamp DEFAULT now()::timestamp,
  tsexpr  timestamptz DEFAULT now() + interval '1 day',
  tstrunc timestamp DEFAULT date_trunc('hour', now()),
  dsum    date DEFAULT CURRENT_DATE + 1
);

-- No primary key, REPLICA IDENTITY FULL: null keys, full "before" images.
CREATE TABLE t_nopk (a integer, b text, c numeric(6,2), d timestamptz);
ALTER TABLE t_nopk REPLICA IDENTITY FULL;

-- Large values: unchanged TOASTed columns in updates (placeholder), with and without FULL.
CREATE TABLE t_toast (id integer PRIMARY KEY, small text, big text, bigb bytea, bigj jsonb, bigarr text[]);
ALTER TABLE t_toast ALTER COLUMN big SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN bigb SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN bigj SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN bigarr SET STORAGE EXTERNAL;
CREATE TABLE t_toast_full (id integer PRIMARY KEY, small text, big text);
ALTER TABLE t_toast_full ALTER COLUMN big SET STORAGE EXTERNAL;
ALTER TABLE t_toast_full REPLICA IDENTITY FULL;

-- Primary-key changes (delete + tombstone + create with __debezium.newkey/oldkey headers).
CREATE TABLE t_pk (id integer PRIMARY KEY, v text);
CREATE TABLE t_composite (a integer, b text, c timestamptz, v text, PRIMARY KEY (a, b));

-- Truncates.
CREATE TABLE t_trunc (id integer PRIMARY KEY, v text);
CREATE TABLE t_trunc2 (id integer PRIMARY KEY, v text);

-- Names: mixed case, another schema.
CREATE TABLE "CamelCase" ("Id" integer PRIMARY KEY, "MixedCol" text);
CREATE SCHEMA inventory;
CREATE TABLE inventory.items (sku text PRIMARY KEY, qty integer NOT NULL DEFAULT 0, price numeric(12,4));

-- hstore (json mode), point, ranges, timetz at the end of the day, tsvector.
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE TABLE t_geo_range (id serial PRIMARY KEY, hs hstore, hsa hstore[], p point, r4 int4range,
  r8 int8range, rn numrange, rts tsrange, rtz tstzrange, rd daterange, ar4 int4range[],
  ttz timetz, ttz0 time(0) with time zone, attz timetz[], tv tsvector);

-- Enums and enum arrays, a domain.
CREATE TYPE mood_t AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN price_d AS numeric(8,2);
CREATE TABLE t_enum (id serial PRIMARY KEY, mood mood_t NOT NULL DEFAULT 'ok', moods mood_t[], price price_d);

-- An outbox table (the EventRouter pass routes it to outbox.event.<aggregatetype>; its own
-- topic is left out of the sentinel wait).
CREATE TABLE t_outbox (id uuid PRIMARY KEY, aggregatetype text NOT NULL, aggregateid text NOT NULL,
  type text NOT NULL, payload jsonb);

-- PostGIS (its own schema, excluded from capture).
CREATE SCHEMA postgis;
CREATE EXTENSION IF NOT EXISTS postgis SCHEMA postgis;
CREATE TABLE t_gis (id serial PRIMARY KEY, g postgis.geometry, gp postgis.geometry(Point, 3187),
  gg postgis.geography(MultiLineString), ga postgis.geometry[]);

-- Characters a Kafka topic name cannot hold (its topic is read by hand, see docs).
CREATE SCHEMA "Quoted_"" . Schema";
CREATE TABLE "Quoted_"" . Schema"."Quoted_"" . Table" (pk serial PRIMARY KEY, "Quoted_"" . Text_Column" text);

-- ---------------------------------------------------------------------------------------
-- Snapshot rows
-- ---------------------------------------------------------------------------------------
INSERT INTO t_types (b, i2, i4, i8, o, f4, f8, n, n0, n38, nu, t, vc, vcu, c, by, u, j, jb,
                     d, tm, tm3, tm0, ts, ts3, ts0, tstz, tstz3, tstz0) VALUES
  (true, 1, 2, 3, 4, 1.5, 2.25, 123.45, 12345, 1234567890123456789012345678.0123456789, 3.14159,
   'hello', 'varchar', 'unbounded', 'ab', '\xdeadbeef', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
   '{"b": 1,  "a": [1, 2]}', '{"b": 1, "a": [1, 2]}',
   '2024-02-29', '12:34:56.789012', '12:34:56.789', '12:34:56', '2024-02-29 12:34:56.789012',
   '2024-02-29 12:34:56.789', '2024-02-29 12:34:56', '2024-02-29 12:34:56.789012+02',
   '2024-02-29 12:34:56.789+02', '2024-02-29 12:34:56+02'),
  (false, -32768, -2147483648, -9223372036854775808, 0, 'NaN', 'NaN', -0.01, -99999, 0, 'NaN',
   '', '', '', '', '\x', '00000000-0000-0000-0000-000000000000', '[]', '{}',
   '1970-01-01', '00:00:00', '00:00:00', '00:00:00', '1970-01-01 00:00:00', '1970-01-01 00:00:00',
   '1970-01-01 00:00:00', '1970-01-01 00:00:00+00', '1970-01-01 00:00:00+00', '1970-01-01 00:00:00+00'),
  (NULL, 32767, 2147483647, 9223372036854775807, 4294967295, 'Infinity', '-Infinity', 99999999.99,
   0, -0.0000000001, 'Infinity', E'tab\there\nnewline "quotes" \\back ünïcødé 😀 \u0001', 'ção',
   repeat('z', 300), 'abcde', '\x00ff7f80', NULL, 'null', '"str"',
   'infinity', '24:00:00', '23:59:59.999', '23:59:59', 'infinity', '-infinity', '1900-01-01 00:00:00',
   'infinity', '-infinity', '1969-12-31 23:59:59.5+00'),
  (NULL, NULL, NULL, NULL, NULL, '-Infinity', 'Infinity', NULL, NULL, NULL, '-Infinity', NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, '-infinity', NULL, NULL, NULL, '-infinity', NULL, NULL,
   '-infinity', NULL, NULL),
  (true, 0, 0, 0, 1, 3.4028235e38, 1.7976931348623157e308, 0, 1, 1e-10, 1e-20,
   'x', 'y', 'z', 'c', '\x00', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '{"nested": {"deep": [true, false, null]}}',
   '{"num": 1.50, "big": 12345678901234567890, "s": "é"}', '0044-03-15 BC', '01:02:03.000004', '01:02:03.004',
   '01:02:03', '0044-03-15 12:00:00 BC', '1500-06-15 01:02:03.456', '2262-04-11 23:47:16',
   '1500-06-15 01:02:03.456789+00', '2038-01-19 03:14:07.999+00', '9999-12-31 23:59:59+00'),
  (false, 7, 7, 7, 7, 1.1, 0.1, 0.5, -1, 123.4567890123, 123456789012345678901234567890.123456789,
   'short', 'v', 'w', 'q', '\x0a0b', '123e4567-e89b-12d3-a456-426614174000', '{"a":1}', '[1, "two", 3.0]',
   '2000-01-01', '08:00:00.5', '08:00:00.5', '08:00:00', '2000-01-01 00:00:00.000001', '2000-01-01 00:00:00.001',
   '2000-01-01 00:00:00', '2000-01-01 00:00:00.000001-08', '2000-01-01 00:00:00.1-08', '2000-01-01 00:00:00-08');

INSERT INTO t_arrays (ab, ai2, ai4, ai8, af4, af8, an, anu, at, avc, ac, aby, au, aj, ajb, ad, atm, ats, atstz) VALUES
  ('{true,false,NULL}', '{1,-2,NULL}', '{1,2,3}', '{9223372036854775807,-1}', '{1.5,NaN,Infinity}',
   '{0.1,-Infinity,NULL}', '{1.10,-2.25}', '{1.5,NaN,123456789.123456789}', '{"a","b c",NULL,"","quote\"d"}',
   '{"x","yy"}', '{"a","bb"}', '{"\\x0102",NULL}', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}',
   ARRAY['{"a":1}'::json, '[2]'::json], ARRAY['{"b": 2}'::jsonb], '{2024-01-01,1970-01-01,NULL}',
   '{12:00:00,00:00:00.000001}', '{"2024-01-01 00:00:00","1970-01-01 00:00:00.5"}',
   '{"2024-01-01 00:00:00+00","2000-06-01 12:00:00.123456+05:30"}'),
  ('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}'),
  (NULL, NULL, '{NULL}', NULL, NULL, NULL, NULL, NULL, '{NULL,NULL}', NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL);

INSERT INTO t_defaults DEFAULT VALUES;
INSERT INTO t_defaults (flag, qty, label, price, created) VALUES (false, NULL, NULL, NULL, '2021-05-05 05:05:05+00');
INSERT INTO t_defaults (qty, small, label, code, ch, price, ratio, r4, d, tm, ts, tstz, u, j, bytes, created)
  VALUES (1, 2, 'x', 'y', 'z', 1.23, 4.5, 6.5, '2000-02-02', '01:01:01', '2001-01-01 01:01:01',
          '2001-01-01 01:01:01+00', '11111111-1111-1111-1111-111111111111', '[1]', '\xff', '2021-01-01 00:00:00+00');

INSERT INTO t_notnull VALUES
  (1, 'one', 1, 1, true, 1.5, 1.25, 1.125, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-01-01', '01:00:00',
   '2024-01-01 01:00:00', '2024-01-01 01:00:00+00', '\x01', '{"one": 1}', '{1}', 'opt'),
  (2, 'two', 2, 2, false, 2.5, 2.25, 2.125, 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-01-02', '02:00:00',
   '2024-01-02 02:00:00', '2024-01-02 02:00:00+00', '\x02', '{"two": 2}', '{2,2}', NULL);

INSERT INTO t_notnull2 VALUES
  (1, 'a', 'b', 1.5, 1, 1, '{}', 1, '2024-01-01 00:00:00.123', '01:02:03.456', '2024-01-01 00:00:00.123+00', '{t}', '{x}'),
  (2, 'a', 'b', 1.5, 1, 1, '{}', 1, '2024-01-01 00:00:00.123', '01:02:03.456', '2024-01-01 00:00:00.123+00', '{t}', '{x}');
INSERT INTO t_defaults2 DEFAULT VALUES;
INSERT INTO t_defaults2 (nu, fnan, finf, ts3, tm3, tstz3, arr, tarr, vc, neg, expr, b2, u, d, ts, j)
  VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);

-- Number formatting probes (Java's Float/Double.toString, BigDecimal scales), time[] precision.
INSERT INTO t_arrays (af4, af8, anu, atm, ad, ats) VALUES
  ('{1e7,9999999,0.001,0.0001,1e21,3.4028235e38,1.17549435e-38,1.4e-45,0.3,100,16777216,1.1,3.3,-0.0}',
   '{1e7,9999999,0.001,0.0001,1e21,1e22,1e23,2e-3,123456.789,2.2250738585072014e-308,4.9e-324,0.30000000000000004,100,1e16,1.23e-5,-0.0}',
   '{0.0,0.00,-0.0,100.00,1.50,1e-5,-1e10}',
   '{12:34:56.123456,23:59:59.999999,24:00:00,00:00:00.0005}',
   '{infinity,-infinity,0044-03-15 BC}',
   '{infinity,-infinity,"0044-03-15 12:00:00 BC"}');
INSERT INTO t_types (nu, n, ts3, ts0, tm3, tstz3) VALUES
  ('0.0', 0.00, 'infinity', '-infinity', '00:00:00.001', 'infinity'),
  ('100.00', -0.00, '1969-12-31 23:59:59.999', 'infinity', '23:59:59.999', '-infinity'),
  ('-0.0', 100, NULL, NULL, NULL, NULL),
  ('1.50', NULL, NULL, NULL, NULL, NULL);

INSERT INTO t_nopk VALUES (1, 'one', 1.00, '2024-01-01 00:00:00+00'), (2, NULL, NULL, NULL), (1, 'one', 1.00, '2024-01-01 00:00:00+00');

INSERT INTO t_toast VALUES
  (1, 'small', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 400) i),
   (SELECT decode(string_agg(md5(i::text), ''), 'hex') FROM generate_series(1, 400) i),
   (SELECT jsonb_build_object('blob', string_agg(md5(i::text), '')) FROM generate_series(1, 400) i),
   (SELECT array_agg(md5(i::text)) FROM generate_series(1, 400) i));
INSERT INTO t_toast_full VALUES (1, 'small', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 400) i));

INSERT INTO t_pk VALUES (1, 'one'), (2, 'two');
INSERT INTO t_composite VALUES (1, 'a', '2024-01-01 00:00:00+00', 'one'), (2, 'b', NULL, 'two');
INSERT INTO t_trunc VALUES (1, 'one'), (2, 'two');
INSERT INTO t_trunc2 VALUES (1, 'one');
INSERT INTO "CamelCase" VALUES (1, 'Mixed');
INSERT INTO inventory.items VALUES ('SKU-1', 5, 1.2345), ('SKU-2', DEFAULT, NULL), ('SKU-😀-"q"-\\', 1, 0);

INSERT INTO t_geo_range (hs, hsa, p, r4, r8, rn, rts, rtz, rd, ar4, ttz, ttz0, attz, tv) VALUES
  ('"key1"=>"val1", "key2"=>NULL, "key 3"=>"a \"q\" b", "k4"=>""',
   ARRAY['"key4"=>"val4", "key5"=>NULL'::hstore, '"key6"=>"val6"'], '(1,1)', '[1,6)', '[1000000,6000000)',
   '[5.3,6.3)', '[2019-03-31 15:30:00,infinity)', '[2017-06-05 11:29:12.549426+00,)', '[2019-03-31,2019-04-30)',
   '{"[1,6)","[1,4)"}', '24:00:00+00', '23:59:59.999999+00', '{24:00:00+00,12:00:00+01}',
   $$a fat cat:3A,1 sat:2B,4C it's b\\s éte$$),
  (NULL, NULL, '(-1.5,2.25e10)', 'empty', NULL, NULL, NULL, NULL, NULL, NULL, '00:00:00+00', NULL, NULL, '');
INSERT INTO "Quoted_"" . Schema"."Quoted_"" . Table" ("Quoted_"" . Text_Column") VALUES ('snapshot');
INSERT INTO t_gis (g, gp, gg, ga) VALUES
  ('POLYGON((166.51 -46.64, 178.52 -46.64, 178.52 -34.45, 166.51 -34.45, 166.51 -46.64))',
   'SRID=3187;POINT(174.9479 -36.7208)', 'MULTILINESTRING((169.1321 -44.7032, 167.8974 -44.6414))',
   ARRAY['GEOMETRYCOLLECTION EMPTY'::postgis.geometry, 'SRID=4326;POINT(1 2)'::postgis.geometry]),
  (NULL, NULL, NULL, NULL);
INSERT INTO t_enum (mood, moods, price) VALUES ('happy', '{sad,happy}', 12.5), ('sad', NULL, NULL);

INSERT INTO t_outbox VALUES
  ('11111111-1111-1111-1111-111111111111', 'order', 'o-1', 'OrderCreated',
   '{"id": 1, "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}], "note": null, "tags": []}'),
  ('22222222-2222-2222-2222-222222222222', 'customer', 'c-1', 'CustomerCreated', '{"name": "Ana", "vip": true}');
