#!/usr/bin/env bash
# The long crash loop: pgcdc killed with SIGKILL at random moments (the first kills inside
# snapshots, then after big transactions, while the broker is paused, at random) while a
# writer commits inserts, updates, deletes, primary-key changes and outbox rows; then every
# topic is checked key by key: changes lost, keys out of commit order, and duplicates not
# explained by a kill. It also prints the output volume (records per change committed).
#
# Usage: scripts/crash-loop.sh [changes] [kills] [seed]    (default 1000000 100, random seed)
#        PGCDC_CRASH_MODE=exactly-once scripts/crash-loop.sh ...
#   PGCDC_TEST_CRASH_SNAPSHOT_KILLS [5]  how many of the first kills land inside snapshots (the
#                                     initial one, then those taken again on the existing slot)
#   PGCDC_TEST_CRASH_SNAPSHOT_THREADS [1 at-least-once, 2 exactly-once]  snapshot.max.threads
#   PGCDC_CRASH_MODE [at-least-once]  exactly-once: exactly.once.source.support=enabled, offsets
#                                     in a topic, the checker reading committed records, and no
#                                     duplicate allowed; streaming: at-least-once with
#                                     pgcdc.pgoutput.streaming=true, big transactions streamed
#                                     by the server and held partly in spill files, the kills
#                                     that follow a big transaction landing from its start on
# CI runs the same tests (each mode) with 200,000 changes and 20 kills, 3 of them in snapshots
# (tests/crash.rs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/services.sh build-deps
scripts/services.sh start all
# shellcheck source=scripts/env.sh
. scripts/env.sh
export PGCDC_TEST_CRASH_CHANGES="${1:-1000000}"
export PGCDC_TEST_CRASH_KILLS="${2:-100}"
export PGCDC_TEST_CRASH_SNAPSHOT_KILLS="${PGCDC_TEST_CRASH_SNAPSHOT_KILLS:-5}"
if [ -n "${3:-}" ]; then export PGCDC_TEST_CRASH_SEED="$3"; fi
case "${PGCDC_CRASH_MODE:-at-least-once}" in
  at-least-once) test=crash::crash_loop_loses_nothing_and_keeps_each_keys_order ;;
  exactly-once) test=crash::crash_loop_in_exactly_once_mode_loses_nothing_and_duplicates_nothing ;;
  streaming) test=crash::crash_loop_with_streamed_transactions_loses_nothing_and_keeps_each_keys_order ;;
  *) echo "crash-loop: PGCDC_CRASH_MODE=$PGCDC_CRASH_MODE: expected at-least-once, exactly-once or streaming" >&2; exit 2 ;;
esac
# Not a pgcdc setting: the processes under test would warn about a PGCDC_* variable they do
# not know.
unset PGCDC_CRASH_MODE
start=$(date +%s)
cargo test --release --test integration "$test" -- --exact --nocapture 2>&1 \
  | grep --line-buffered -A1 -E '^crash loop|panicked|test result|^  key '
echo "crash-loop: $(( $(date +%s) - start )) s"
# The run's topics hold tens of GB on the fault broker: delete them (crash_<pid>_<n>...).
if command -v java >/dev/null 2>&1 && [ -d target/services/kafka/lib ]; then
  java -Xmx256m -cp "target/services/kafka/lib/*" bench/DeleteTopics.java \
    "$PGCDC_TEST_KAFKA_FAULT" 'crash_[0-9]+_[0-9]+(\..*|-offsets)' >/dev/null \
    && echo "crash-loop: deleted the run's topics" \
    || echo "crash-loop: could not delete the run's topics (crash_*) from the fault broker" >&2
fi
