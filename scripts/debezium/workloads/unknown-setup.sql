-- Differential harness, workload "unknown", part 1: types Debezium 3.6.1 maps only under
-- include.unknown.datatypes=true (the built-in geometric types other than point, through a
-- domain and in arrays; multiranges; tsquery), next to tsvector, which it maps always.
CREATE DOMAIN boxd AS box;
CREATE TABLE t_geom (id serial PRIMARY KEY, b box, c circle, l line, s lseg, pa path, po polygon,
  bd boxd, ab box[], ac circle[], apo polygon[], mr int4multirange, mrn nummultirange, mrd datemultirange, tv tsvector, tq tsquery);
INSERT INTO t_geom (b, c, l, s, pa, po, bd, ab, ac, apo, mr, mrn, mrd, tv, tq) VALUES
  ('(1,2),(3,4)', '<(1,2),3>', '{1,2,3}', '[(1,2),(3,4)]', '((1,2),(3,4),(5,6))', '((0,0),(0,1),(1,1))',
   '(5,6),(7,8)', ARRAY['(1,1),(0,0)'::box, '(2,2),(1,1)'], ARRAY['<(0,0),1>'::circle], ARRAY['((0,0),(1,1),(1,0))'::polygon],
   '{[1,3),[5,7)}', '{[1.5,2.5]}', '{[2020-01-01,2020-02-01)}', 'a fat cat:3 sat', 'fat & cat'),
  (NULL, NULL, NULL, NULL, '[(0,0),(1,1)]', NULL, NULL, NULL, NULL, NULL, '{}', NULL, NULL, '', NULL);
