#!/usr/bin/env bash
# Outbox throughput next to the core throughput, measured in the same run.
#
# Usage: scripts/bench-outbox.sh [--help]
#
# Runs scripts/bench.sh twice, one after the other, with the same settings:
#   1. the core workload (table t, one topic) with BENCH_ROWS rows;
#   2. BENCH_WORKLOAD=outbox: BENCH_ROWS inserts into the outbox table of
#      migrations/002_outbox.sql (10 aggregate types, ~500 B jsonb payloads), read through the
#      EventRouter into 10 topics <prefix>.outbox.event.Aggregate<n>;
# then prints both events/s figures and their ratio, and writes them to
# target/bench/outbox-compare-<UTC stamp>.json. Each run is timed from process start to the
# last Kafka acknowledgement and compared with pg_recvlogical on the same backlog (see
# bench/README.md). Environment: BENCH_ROWS [500000]; every other BENCH_* variable of
# scripts/bench.sh applies to both runs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
case "${1:-}" in
  -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "bench-outbox: unknown argument: $1" >&2; exit 2 ;;
esac
export BENCH_ROWS=${BENCH_ROWS:-500000}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p target/bench

run() { # workload -> path of its JSON report
  local before after
  before=$(ls target/bench/"$1"-*.json 2>/dev/null | sort | tail -n 1 || true)
  BENCH_WORKLOAD=$1 scripts/bench.sh >&2
  after=$(ls target/bench/"$1"-*.json 2>/dev/null | sort | tail -n 1 || true)
  [ -n "$after" ] && [ "$after" != "$before" ] || { echo "bench-outbox: no report from the $1 run" >&2; exit 1; }
  echo "$after"
}
CORE=$(run core)
BENCH_NO_BUILD=1
export BENCH_NO_BUILD
OUTBOX=$(run outbox)

OUT="target/bench/outbox-compare-$STAMP.json"
jq -n --slurpfile c "$CORE" --slurpfile o "$OUTBOX" '
  {rows: $o[0].workload.rows,
   core: {report: $c[0].run_dir, events_per_s: $c[0].pgcdc.events_per_s,
          pg_recvlogical_rows_per_s: $c[0].pg_recvlogical.rows_per_s, ratio_to_recvlogical: $c[0].ratio_pgcdc_to_pg_recvlogical,
          avg_value_bytes: $c[0].kafka.avg_value_bytes, peak_rss_mib: $c[0].pgcdc.peak_rss_mib},
   outbox: {report: $o[0].run_dir, events_per_s: $o[0].pgcdc.events_per_s,
            pg_recvlogical_rows_per_s: $o[0].pg_recvlogical.rows_per_s, ratio_to_recvlogical: $o[0].ratio_pgcdc_to_pg_recvlogical,
            avg_value_bytes: $o[0].kafka.avg_value_bytes, peak_rss_mib: $o[0].pgcdc.peak_rss_mib,
            records: $o[0].kafka.records, verified: $o[0].kafka.verified},
   outbox_to_core: (if $c[0].pgcdc.events_per_s > 0 then ($o[0].pgcdc.events_per_s / $c[0].pgcdc.events_per_s * 1000 | round / 1000) else null end)}' >"$OUT"
jq -r '"
=== outbox vs core (same run, \(.rows) rows each) ===
core    \(.core.events_per_s) events/s   (pg_recvlogical \(.core.pg_recvlogical_rows_per_s) rows/s, ratio \(.core.ratio_to_recvlogical); value \(.core.avg_value_bytes) B; peak RSS \(.core.peak_rss_mib) MiB)
outbox  \(.outbox.events_per_s) events/s   (pg_recvlogical \(.outbox.pg_recvlogical_rows_per_s) rows/s, ratio \(.outbox.ratio_to_recvlogical); value \(.outbox.avg_value_bytes) B; peak RSS \(.outbox.peak_rss_mib) MiB; \(.outbox.records) records, verified \(.outbox.verified))
outbox / core = \(.outbox_to_core)
report: '"$OUT"'"' "$OUT"
