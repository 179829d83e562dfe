#!/usr/bin/env bash
# The long crash loop: pgcdc killed with SIGKILL at random moments (during the snapshot,
# after big transactions, while the broker is paused) while a writer commits inserts,
# updates, deletes, primary-key changes and outbox rows; then every topic is checked key by
# key: changes lost, keys out of commit order, and duplicates not explained by a kill.
#
# Usage: scripts/crash-loop.sh [changes] [kills] [seed]    (default 1000000 100, random seed)
# CI runs the same test with 200,000 changes and 20 kills (tests/crash.rs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/services.sh build-deps
scripts/services.sh start all
# shellcheck source=scripts/env.sh
. scripts/env.sh
export PGCDC_TEST_CRASH_CHANGES="${1:-1000000}"
export PGCDC_TEST_CRASH_KILLS="${2:-100}"
if [ -n "${3:-}" ]; then export PGCDC_TEST_CRASH_SEED="$3"; fi
start=$(date +%s)
cargo test --release --test integration crash::crash_loop_loses_nothing_and_keeps_each_keys_order -- --exact --nocapture 2>&1 \
  | grep --line-buffered -E '^crash loop|panicked|test result|^  key '
echo "crash-loop: $(( $(date +%s) - start )) s"
