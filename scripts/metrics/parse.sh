#!/usr/bin/env bash
# Parses OpenMetrics text on stdin with Prometheus' Python parser (scripts/metrics/parse.py);
# prints one JSON sample per line. Exit status 1 when the text breaks the format.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
PY=$("$ROOT/scripts/python-env.sh")
exec "$PY" "$ROOT/scripts/metrics/parse.py"
