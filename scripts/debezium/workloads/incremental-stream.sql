-- Differential harness, workload "incremental", part 2: a streamed change, then the signals
-- (the same rows reach both connectors through the WAL): a log signal, and an incremental
-- snapshot of every table, t_int only where id < 1000. The harness then waits until both
-- connectors have completed it (incremental-wait.sh) before the sentinel.
UPDATE t_int SET t = 'streamed' WHERE id = 3;
INSERT INTO dbz_signal VALUES ('log-1', 'log', '{"message": "harness log signal"}');
INSERT INTO dbz_signal VALUES ('incr-1', 'execute-snapshot',
  '{"data-collections": ["public\\.t_.*"], "type": "incremental",
    "additional-conditions": [{"data-collection": "public.t_int", "filter": "id < 1000"}]}');
