#!/usr/bin/env bash
# Makes (on first use, or when scripts/python-requirements.txt changes) the tests' Python
# virtual environment under target/python from PyPI, and prints its python's path.
# Used by scripts/avro/consumer.sh and scripts/metrics/parse.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
VENV="$ROOT/target/python"
REQ="$ROOT/scripts/python-requirements.txt"
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ "$(cat "$VENV/.complete" 2>/dev/null)" != "$want" ]; then
  command -v python3 >/dev/null 2>&1 || { echo "python env: python3 is missing (apt-get install python3 python3-venv)" >&2; exit 2; }
  rm -rf "$VENV"
  python3 -m venv "$VENV" >&2 || { echo "python env: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 2; }
  "$VENV/bin/pip" install -q -r "$REQ" >&2
  echo "$want" > "$VENV/.complete"
fi
echo "$VENV/bin/python"
