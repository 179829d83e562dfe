-- Differential harness, workload "ddl", part 3: the sentinel, one row per topic.
INSERT INTO evolving VALUES (999, 999, 'sentinel', 'd', 999);
INSERT INTO steady VALUES (999, 'sentinel');
