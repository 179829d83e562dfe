#!/usr/bin/env bash
# Stops what scripts/debezium/run.sh or switch.sh started (pgcdc, Kafka Connect, the third
# broker) and drops their slots, databases and pgcdc-side topics; needed only after DBZ_KEEP=1
# or an interrupted run.
# The fetched jars stay cached.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
harness_cleanup
switch_names
harness_cleanup
log "stopped and cleaned up"
