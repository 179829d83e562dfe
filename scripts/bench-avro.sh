#!/usr/bin/env bash
# Avro throughput next to JSON, measured in the same run.
#
# Usage: scripts/bench-avro.sh [--help]
#
# Runs scripts/bench.sh twice, one after the other, on the core workload with the same
# settings: 1. JsonConverter with schemas (the default); 2. BENCH_CONVERTER=avro: Confluent's
# AvroConverter for key and value with the schema registry of scripts/services.sh (Apicurio
# Registry, started if needed). Prints, for each: events/s, average key and value bytes, pgcdc's
# CPU seconds per million events, peak RSS and (Avro) the schema registry calls, which should be
# two (the key's and the value's schema), not one per record; then the ratios. Writes them to
# target/bench/avro-compare-<UTC stamp>.json. Environment: BENCH_ROWS [500000]; every other
# BENCH_* variable of scripts/bench.sh applies to both runs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
case "${1:-}" in
  -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "bench-avro: unknown argument: $1" >&2; exit 2 ;;
esac
export BENCH_ROWS=${BENCH_ROWS:-500000}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p target/bench

run() { # converter -> path of its JSON report
  local before after
  before=$(ls target/bench/core-*.json 2>/dev/null | sort | tail -n 1 || true)
  BENCH_CONVERTER=$1 scripts/bench.sh >&2
  after=$(ls target/bench/core-*.json 2>/dev/null | sort | tail -n 1 || true)
  [ -n "$after" ] && [ "$after" != "$before" ] || { echo "bench-avro: no report from the $1 run" >&2; exit 1; }
  echo "$after"
}
JSON_REPORT=$(run json)
BENCH_NO_BUILD=1
export BENCH_NO_BUILD
AVRO_REPORT=$(run avro)

OUT="target/bench/avro-compare-$STAMP.json"
jq -n --slurpfile j "$JSON_REPORT" --slurpfile a "$AVRO_REPORT" '
  def side(r): {report: r.run_dir, events_per_s: r.pgcdc.events_per_s,
    avg_key_bytes: r.kafka.avg_key_bytes, avg_value_bytes: r.kafka.avg_value_bytes,
    cpu_s_per_million: (if r.kafka.records > 0 then (r.pgcdc.cpu_s_at_last_ack / r.kafka.records * 1000000 * 100 | round / 100) else null end),
    peak_rss_mib: r.pgcdc.peak_rss_mib, registry_calls: r.pgcdc.registry_calls,
    records: r.kafka.records, verified: r.kafka.verified, loadavg_at_start: r.host.loadavg_at_start};
  {rows: $a[0].workload.rows, json: side($j[0]), avro: side($a[0])}
  | .avro_to_json = {events_per_s: (if .json.events_per_s > 0 then (.avro.events_per_s / .json.events_per_s * 1000 | round / 1000) else null end),
                     value_bytes: (if .json.avg_value_bytes > 0 then (.avro.avg_value_bytes / .json.avg_value_bytes * 1000 | round / 1000) else null end),
                     cpu_per_event: (if .json.cpu_s_per_million > 0 then (.avro.cpu_s_per_million / .json.cpu_s_per_million * 1000 | round / 1000) else null end)}' >"$OUT"
jq -r '"
=== Avro vs JSON (core workload, same run, \(.rows) rows each) ===
json  \(.json.events_per_s) events/s; key \(.json.avg_key_bytes) B, value \(.json.avg_value_bytes) B; \(.json.cpu_s_per_million) cpu-s per million events; peak RSS \(.json.peak_rss_mib) MiB; \(.json.records) records, verified \(.json.verified)
avro  \(.avro.events_per_s) events/s; key \(.avro.avg_key_bytes) B, value \(.avro.avg_value_bytes) B; \(.avro.cpu_s_per_million) cpu-s per million events; peak RSS \(.avro.peak_rss_mib) MiB; \(.avro.records) records, verified \(.avro.verified); \(.avro.registry_calls) schema registry calls
avro / json: events/s \(.avro_to_json.events_per_s), value bytes \(.avro_to_json.value_bytes), cpu per event \(.avro_to_json.cpu_per_event)
report: '"$OUT"'"' "$OUT"
