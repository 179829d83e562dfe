-- Differential harness, workload "incremental", part 3: the sentinel (one row per table).
INSERT INTO t_int (id, t) VALUES (100000, 'sentinel');
INSERT INTO t_comp VALUES ('zz', 0, 'sentinel');
INSERT INTO t_uuid VALUES ('00000000-0000-0000-0000-000000000000', 0);
INSERT INTO t_empty VALUES (0);
INSERT INTO t_nokey VALUES (0);
INSERT INTO dbz_signal VALUES ('sentinel', 'none', NULL);
