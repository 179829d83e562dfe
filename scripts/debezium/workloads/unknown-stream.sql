-- Differential harness, workload "unknown", part 2: the same values streamed.
INSERT INTO t_geom (b, c, l, s, pa, po, bd, ab, ac, apo, mr, mrn, mrd, tv, tq) SELECT b, c, l, s, pa, po, bd, ab, ac, apo, mr, mrn, mrd, tv, tq FROM t_geom ORDER BY id;
