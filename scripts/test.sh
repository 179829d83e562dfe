#!/usr/bin/env bash
# Start the local services (PostgreSQL, two Kafka brokers), then run the whole test suite.
# Extra arguments go to the test binaries, e.g. scripts/test.sh pgoutput
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/services.sh start all
# shellcheck source=scripts/env.sh
. scripts/env.sh
cargo test --all-targets -- --test-threads=4 "$@"
