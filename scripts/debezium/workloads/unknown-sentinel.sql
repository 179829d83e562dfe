-- Differential harness, workload "unknown", part 3: the sentinel (one row per table).
INSERT INTO t_geom (b) VALUES ('(9,9),(0,0)');
