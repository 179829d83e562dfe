-- Differential harness, workload "partitions", part 1: a partitioned table (two range
-- partitions, one of them with REPLICA IDENTITY FULL, as in BUG-19) and a plain table, with
-- snapshot rows. Run with DBZ_EXTRA_CONFIG=publish.via.partition.root=true to see the changes of
-- the partitions under the root table's topic.
CREATE TABLE events (id bigint, created date, payload text, PRIMARY KEY (id, created))
  PARTITION BY RANGE (created);
CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
ALTER TABLE events REPLICA IDENTITY FULL;
ALTER TABLE events_2025 REPLICA IDENTITY FULL;
CREATE TABLE plain (id int PRIMARY KEY, v text);
INSERT INTO events VALUES (1, '2024-03-01', 'snap 2024'), (2, '2025-03-01', 'snap 2025');
INSERT INTO plain VALUES (1, 'snap');
