-- Differential harness, workload "ddl", part 2: columns added (nullable, NOT NULL with a
-- default), dropped, renamed and retyped between writes, in autocommit and inside
-- transactions that write before and after the change, and a change that rolls back.
INSERT INTO evolving VALUES (2, 2, 'before', 2.5);
ALTER TABLE evolving ADD COLUMN d text;
INSERT INTO evolving VALUES (3, 3, 'added', 3.5, 'd3');
BEGIN;
UPDATE evolving SET b = 'in tx before' WHERE id = 1;
ALTER TABLE evolving ADD COLUMN e int NOT NULL DEFAULT 7;
INSERT INTO evolving VALUES (4, 4, 'in tx after', 4.5, 'd4', 44);
UPDATE evolving SET a = 40 WHERE id = 4;
COMMIT;
ALTER TABLE evolving DROP COLUMN c;
INSERT INTO evolving VALUES (5, 5, 'dropped', 'd5', 55);
ALTER TABLE evolving RENAME COLUMN b TO bee;
UPDATE evolving SET bee = 'renamed' WHERE id = 5;
ALTER TABLE evolving ALTER COLUMN a TYPE bigint;
INSERT INTO evolving VALUES (6, 6000000000, 'widened', 'd6', 66);
BEGIN;
ALTER TABLE evolving ALTER COLUMN d TYPE varchar(10);
INSERT INTO evolving VALUES (7, 7, 'retyped in tx', 'd7', 77);
ALTER TABLE evolving ALTER COLUMN e DROP NOT NULL;
INSERT INTO evolving VALUES (8, 8, 'nullable e', 'd8', NULL);
DELETE FROM evolving WHERE id = 2;
COMMIT;
BEGIN;
ALTER TABLE evolving ADD COLUMN rolled_back int;
INSERT INTO evolving VALUES (9, 9, 'rolled back', 'd9', 99, 9);
ROLLBACK;
INSERT INTO evolving VALUES (10, 10, 'after the rollback', 'd10', 100);
INSERT INTO steady VALUES (2, 'streamed');
