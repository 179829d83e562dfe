-- Differential harness, workload "partitions", part 2: inserts, updates (one moving a row to
-- the other partition), deletes on both partitions, a partition attached while streaming, and
-- one detached.
INSERT INTO events VALUES (3, '2024-06-01', 'p1'), (4, '2025-06-01', 'p2');
UPDATE events SET payload = payload || '!';
UPDATE events SET created = '2025-07-01' WHERE id = 3;
DELETE FROM events WHERE id = 4;
CREATE TABLE events_2026 (id bigint NOT NULL, created date NOT NULL, payload text, PRIMARY KEY (id, created));
ALTER TABLE events ATTACH PARTITION events_2026 FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
INSERT INTO events VALUES (5, '2026-02-01', 'attached');
ALTER TABLE events DETACH PARTITION events_2024;
INSERT INTO events_2024 VALUES (6, '2024-09-01', 'detached');
INSERT INTO plain VALUES (2, 'streamed');
