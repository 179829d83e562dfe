-- Differential harness, workload "partitions", part 3: the sentinel, one row per topic.
INSERT INTO events VALUES (999, '2025-12-31', 'sentinel');
INSERT INTO plain VALUES (999, 'sentinel');
