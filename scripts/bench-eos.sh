#!/usr/bin/env bash
# The throughput cost of exactly-once delivery, measured in one run.
#
# Usage: scripts/bench-eos.sh [--help]
#
# Runs scripts/bench.sh on the core workload three times, one after the other, with the same
# settings and backlog size:
#   1. at-least-once (the default);
#   2. exactly-once, transaction.boundary=poll (BENCH_EXACTLY_ONCE=1);
#   3. exactly-once, transaction.boundary=connector (one Kafka transaction per PostgreSQL
#      transaction);
# then prints events/s, CPU-s per million events and peak RSS of each, their ratios to the
# at-least-once run, and writes them to target/bench/eos-compare-<UTC stamp>.json. Each run
# is timed from process start until PostgreSQL holds the last commit as confirmed, which in
# exactly-once mode means its Kafka transaction committed. Environment: BENCH_ROWS [500000];
# every other BENCH_* variable of scripts/bench.sh applies to all runs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
case "${1:-}" in
  -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "bench-eos: unknown argument: $1" >&2; exit 2 ;;
esac
export BENCH_ROWS=${BENCH_ROWS:-500000}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p target/bench

run() { # exactly-once (0|1), boundary -> path of its JSON report
  local before after
  before=$(ls target/bench/core-*.json 2>/dev/null | sort | tail -n 1 || true)
  BENCH_EXACTLY_ONCE=$1 BENCH_TRANSACTION_BOUNDARY=$2 scripts/bench.sh >&2
  after=$(ls target/bench/core-*.json 2>/dev/null | sort | tail -n 1 || true)
  [ -n "$after" ] && [ "$after" != "$before" ] || { echo "bench-eos: no report from the run ($1 $2)" >&2; exit 1; }
  echo "$after"
}
ALO=$(run 0 poll)
export BENCH_NO_BUILD=1
POLL=$(run 1 poll)
CONN=$(run 1 connector)

OUT="target/bench/eos-compare-$STAMP.json"
jq -n --slurpfile a "$ALO" --slurpfile p "$POLL" --slurpfile c "$CONN" '
  def one($r): {report: $r.run_dir, events_per_s: $r.pgcdc.events_per_s,
    cpu_s_per_million: (if $r.pgcdc.cpu_s_at_last_ack then ($r.pgcdc.cpu_s_at_last_ack / $r.workload.rows * 1000000 * 10 | round / 10) else null end),
    peak_rss_mib: $r.pgcdc.peak_rss_mib, broker_cpu_s: $r.during_pgcdc_run.kafka_broker_cpu_s,
    pg_recvlogical_rows_per_s: $r.pg_recvlogical.rows_per_s, ratio_to_recvlogical: $r.ratio_pgcdc_to_pg_recvlogical,
    records: $r.kafka.records, verified: $r.kafka.verified, host_busy_pct: $r.during_pgcdc_run.host_busy_pct};
  def ratio($x; $y): if $y > 0 then ($x / $y * 1000 | round / 1000) else null end;
  {rows: $a[0].workload.rows, rows_per_transaction: $a[0].workload.rows_per_transaction,
   at_least_once: one($a[0]), exactly_once_poll: one($p[0]), exactly_once_connector: one($c[0]),
   poll_to_at_least_once: ratio($p[0].pgcdc.events_per_s; $a[0].pgcdc.events_per_s),
   connector_to_at_least_once: ratio($c[0].pgcdc.events_per_s; $a[0].pgcdc.events_per_s)}' >"$OUT"
jq -r '"
=== exactly-once vs at-least-once (same script, \(.rows) rows in transactions of \(.rows_per_transaction)) ===
at-least-once            \(.at_least_once.events_per_s) events/s, \(.at_least_once.cpu_s_per_million) cpu-s per million, peak RSS \(.at_least_once.peak_rss_mib) MiB, broker \(.at_least_once.broker_cpu_s) cpu-s (pg_recvlogical \(.at_least_once.pg_recvlogical_rows_per_s) rows/s)
exactly-once, poll       \(.exactly_once_poll.events_per_s) events/s, \(.exactly_once_poll.cpu_s_per_million) cpu-s per million, peak RSS \(.exactly_once_poll.peak_rss_mib) MiB, broker \(.exactly_once_poll.broker_cpu_s) cpu-s; verified \(.exactly_once_poll.verified)
exactly-once, connector  \(.exactly_once_connector.events_per_s) events/s, \(.exactly_once_connector.cpu_s_per_million) cpu-s per million, peak RSS \(.exactly_once_connector.peak_rss_mib) MiB, broker \(.exactly_once_connector.broker_cpu_s) cpu-s; verified \(.exactly_once_connector.verified)
exactly-once / at-least-once: poll \(.poll_to_at_least_once), connector \(.connector_to_at_least_once)
report: '"$OUT"'"' "$OUT"
