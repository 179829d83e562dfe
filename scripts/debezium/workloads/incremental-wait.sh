# Differential harness, workload "incremental": sourced by run.sh between the stream and the
# sentinel. Waits until both connectors say their incremental snapshot completed: Debezium
# logs each table it finishes, pgcdc logs the completion.
wait_incremental() {
  local deadline=$(( $(date +%s) + TIMEOUT )) tables=4
  until [ "$(grep -cE "incremental snapshotting of table '[^']+' finished" "$CONNECT_RUN/logs/connect.log" 2>/dev/null)" -ge "$tables" ] \
      && grep -q 'incremental snapshot completed' "$RUN/pgcdc.log" 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || die "the incremental snapshots did not complete in ${TIMEOUT}s (logs: $CONNECT_RUN/logs/connect.log, $RUN/pgcdc.log)"
    sleep 0.5
  done
}
phase "waiting for both incremental snapshots to complete"
wait_incremental
