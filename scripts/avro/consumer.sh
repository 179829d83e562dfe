#!/usr/bin/env bash
# Runs scripts/avro/consumer.py (Confluent's Python client with its AvroDeserializer) in a
# virtual environment under target/python, made on first use from PyPI:
# confluent-kafka[avro,schemaregistry] (fastavro and the schema registry client with it).
# Arguments go to consumer.py: BOOTSTRAP REGISTRY_URL TOPIC=COUNT...
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
VENV="$ROOT/target/python"
if [ ! -f "$VENV/.complete" ]; then
  command -v python3 >/dev/null 2>&1 || { echo "avro consumer: python3 is missing (apt-get install python3 python3-venv)" >&2; exit 2; }
  rm -rf "$VENV"
  python3 -m venv "$VENV" >&2 || { echo "avro consumer: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 2; }
  "$VENV/bin/pip" install -q "confluent-kafka[avro,schemaregistry]==2.16.1" >&2
  touch "$VENV/.complete"
fi
exec "$VENV/bin/python" "$ROOT/scripts/avro/consumer.py" "$@"
