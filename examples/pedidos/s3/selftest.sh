#!/usr/bin/env bash
# The example's crash test, against the local Kafka (127.0.0.1:59092). It begins and ends with
# stop.sh --clean: a running sink, its bucket and its consumer group's offsets are gone after it.
#   1. start.sh on a new topic seed-s3-test-<time> (4 partitions);
#   2. testkit.py writes COUNT orders to it in transactions of 100 at RATE orders/s, plus one
#      aborted transaction (which must not reach the bucket);
#   3. with objects of 20 records (file.max.records), SIGKILL the Connect worker 30 PUTs into its
#      first flush (objects written, offsets not committed), then start.sh again;
#   4. check.sh: every order in the bucket exactly once, or the duplicates;
#   5. tear down: stop.sh --clean (connector deleted, worker and s3proxy stopped, bucket emptied),
#      then the test topic, the worker's seed-s3-* topics and the consumer group are deleted
#      (the objects' list and the worker log stay in target/seed/test/<topic>/).
# Prints how long each start took, when the objects arrived and which objects were written twice.
#
# Usage: examples/pedidos/s3/selftest.sh [COUNT] [RATE]     (defaults 5000 and 250)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=examples/pedidos/s3/lib.sh
. "$HERE/lib.sh"

COUNT=${1:-5000}
RATE=${2:-250}
TOPIC="seed-s3-test-$(date +%s)"
OUT="$SEED/test/$TOPIC"
PY=$("$ROOT/scripts/python-env.sh")
mkdir -p "$OUT"

# "wrote s3://..." lines of this topic's objects in the worker log (every start appends to it).
wrote() { grep -F "wrote s3://$BUCKET/" "$CONNECT_RUN/logs/connect.log" 2>/dev/null | grep -cF "/$TOPIC-" || true; }

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local rc=$?
  [ -z "${producer:-}" ] || kill "$producer" 2>/dev/null || true
  # What the bucket held and the worker log, for a look afterwards (stop.sh --clean removes them).
  if [ -d "$S3_DATA" ]; then find "$S3_DATA" -type f -name "$TOPIC-*" -printf '%P %s\n' | sort >"$OUT/objects"; fi
  cp "$CONNECT_RUN/logs/connect.log" "$OUT/" 2>/dev/null || true
  "$HERE/stop.sh" --clean || true
  "$PY" "$HERE/testkit.py" --bootstrap "$KAFKA" delete --topic "$TOPIC" --topic seed-s3-configs \
    --topic seed-s3-offsets --topic seed-s3-status --group "connect-$CONNECTOR" || true
  exit "$rc"
}
trap cleanup EXIT

"$HERE/stop.sh" --clean
"$PY" "$HERE/testkit.py" --bootstrap "$KAFKA" delete --group "connect-$CONNECTOR"
# Objects of at most 20 records: a flush is many PUTs, one after the other, so the SIGKILL lands
# while some objects of a flush are written and its offsets are not committed.
export SEED_S3_FILE_MAX_RECORDS=20
"$PY" "$HERE/testkit.py" --bootstrap "$KAFKA" create --topic "$TOPIC" --partitions 4
t0=$(now)
"$HERE/start.sh" "$TOPIC"
log "selftest: everything up in $(elapsed "$t0")s"

t0=$(now)
"$PY" "$HERE/testkit.py" --bootstrap "$KAFKA" produce --topic "$TOPIC" --count "$COUNT" \
  --rate "$RATE" --ids-out "$OUT/ids" >"$OUT/produce.log" 2>&1 &
producer=$!

# Kill while the sink is writing: 30 PUTs into its first flush (some tasks done, some not).
deadline=$(( $(date +%s) + TIMEOUT ))
until [ "$(wrote)" -ge 30 ]; do
  kill -0 "$producer" 2>/dev/null || [ "$(wrote)" -gt 0 ] || die "the producer exited: $(cat "$OUT/produce.log")"
  [ "$(date +%s)" -lt "$deadline" ] || die "not 30 objects written after ${TIMEOUT}s"
  sleep 0.02
done
pid=$(connect_pid) || die "the worker is not running"
kill -KILL "$pid"
log "selftest: SIGKILL to the worker (pid $pid) $(elapsed "$t0")s into the run, after $(wrote) PUTs"
find "$S3_DATA" -type f -name "$TOPIC-*" | sort >"$OUT/objects-at-kill"

t1=$(now)
"$HERE/start.sh" "$TOPIC"
log "selftest: worker and connector back in $(elapsed "$t1")s"
wait "$producer" || die "the producer failed: $(cat "$OUT/produce.log")"
producer=
cat "$OUT/produce.log" >&2
log "selftest: all $COUNT orders committed to Kafka $(elapsed "$t0")s into the run"

rc=0
"$HERE/check.sh" -t "$TOPIC" -T "$TIMEOUT" -s 15 "$COUNT" "$OUT/ids" || rc=$?
grep -F "wrote s3://$BUCKET/" "$CONNECT_RUN/logs/connect.log" | grep -F "/$TOPIC-" \
  | sed 's/.*wrote s3:\/\/[^/]*\/\([^ ]*\) .*/\1/' | sort | uniq -d >"$OUT/written-twice"
log "selftest: $(wrote) PUTs, $(sort -u "$OUT/objects-at-kill" | wc -l) objects existed at the kill," \
    "$(wc -l <"$OUT/written-twice") objects written twice (same name, overwritten)"
sed 's/^/  overwritten: /' "$OUT/written-twice" >&2
exit "$rc"
