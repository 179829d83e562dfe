#!/usr/bin/env bash
# Runs scripts/avro/consumer.py (Confluent's Python client with its AvroDeserializer) in the
# tests' virtual environment (scripts/python-env.sh).
# Arguments go to consumer.py: BOOTSTRAP REGISTRY_URL TOPIC=COUNT...
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
PY=$("$ROOT/scripts/python-env.sh")
exec "$PY" "$ROOT/scripts/avro/consumer.py" "$@"
