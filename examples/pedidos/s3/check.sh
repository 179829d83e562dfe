#!/usr/bin/env bash
# Waits until the bucket's objects hold COUNT orders of TOPIC, read through the S3 API, then
# prints one line such as
#   s3: 5000 orders in 12 objects under dt=2026-12-07/hr=10, each once (0 missing, 0 duplicated; ...)
# and exits 0; exits 1 with the missing, duplicated (or, with IDS_FILE, unexpected) pedido_id
# values when the objects do not hold each order exactly once, or when the wait times out.
# The sink writes objects only at its offset commits (offset.flush.interval.ms, start.sh), so the
# last records show up that long after they reach Kafka.
#
# Usage: examples/pedidos/s3/check.sh [-t TOPIC] [-T TIMEOUT] [-s SETTLE] COUNT [IDS_FILE]
#   TOPIC     only objects of this topic (names {{topic}}-{{partition}}-...; default pedidos.criados)
#   TIMEOUT   seconds to wait for COUNT orders (default 180)
#   SETTLE    once they are there, look again after SETTLE seconds (default 0)
#   IDS_FILE  the expected pedido_id values, one a line (COUNT distinct values)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=examples/pedidos/s3/lib.sh
. "$HERE/lib.sh"

topic=pedidos.criados wait=180 settle=0
while getopts 't:T:s:' opt; do
  case "$opt" in
    t) topic=$OPTARG ;;
    T) wait=$OPTARG ;;
    s) settle=$OPTARG ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ] || [ $# -gt 2 ]; then sed -n '2,16p' "$0" >&2; exit 2; fi
command -v python3 >/dev/null 2>&1 || die "missing: python3"

exec python3 "$HERE/check.py" "$@" --topic "$topic" --timeout "$wait" --settle "$settle" \
  --endpoint "$S3_ENDPOINT" --bucket "$BUCKET" --region "$S3_REGION" \
  --access-key "$S3_ACCESS_KEY" --secret-key "$S3_SECRET_KEY"
