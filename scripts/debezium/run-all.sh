#!/usr/bin/env bash
# The differential harness once with the plain connector config and once per extra config in
# scripts/debezium/configs/*.conf (one k=v per line, # comments). Exit 0 only when every pass
# has every record identical or listed in deliberate.tsv. Each pass's run directory (reports,
# diffs.jsonl, pgcdc.log) is kept as target/debezium/run-<pass>/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rc=0
summary=()
run_pass() {
  local name=$1 extra=$2 status=0
  echo "== differential pass: $name"
  DBZ_EXTRA_CONFIG="$extra" scripts/debezium/run.sh || status=$?
  summary+=("$name: $(grep -m1 '^records compared' target/debezium/run/report.txt 2>/dev/null || echo 'no report') (exit $status)")
  # Keep each pass's reports, differing records and pgcdc log (the next pass reuses run/).
  rm -rf "target/debezium/run-$name" && cp -r target/debezium/run "target/debezium/run-$name" || true
  [ "$status" = 0 ] || rc=1
}
run_pass plain ""
for f in scripts/debezium/configs/*.conf; do
  run_pass "$(basename "$f" .conf)" "$(grep -v '^[[:space:]]*#' "$f" | sed '/^[[:space:]]*$/d')"
done
printf '%s\n' "${summary[@]}"
exit "$rc"
