#!/usr/bin/env bash
# Stops what examples/pedidos/s3/start.sh started: the Connect worker, then s3proxy.
# The bucket's objects (target/seed/s3-data/), the worker's topics and the connector's consumer
# group stay, so a later start.sh resumes where this one stopped.
#
# Usage: examples/pedidos/s3/stop.sh [--clean]
#   --clean   also delete the connector (before stopping the worker), the bucket's objects and the
#             worker's log directory; the connector's consumer group (connect-pedidos-to-s3) and
#             the seed-s3-* topics stay on the broker (delete them with testkit.py, README.md)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=examples/pedidos/s3/lib.sh
. "$HERE/lib.sh"

clean=0
case "${1:-}" in
  "") ;;
  --clean) clean=1 ;;
  *) sed -n '2,10p' "$0" >&2; exit 2 ;;
esac

if pid=$(connect_pid); then
  if [ "$clean" = 1 ]; then
    rest -o /dev/null -X DELETE "http://127.0.0.1:$REST_PORT/connectors/$CONNECTOR" || true
    log "connector: $CONNECTOR deleted"
  fi
  stop_pid "$pid" 60 connect
  log "connect: stopped (pid $pid)"
else
  log "connect: not running"
fi
rm -f "$CONNECT_RUN/connect.pid"

if pid=$(s3proxy_pid); then
  stop_pid "$pid" 30 s3proxy
  log "s3proxy: stopped (pid $pid)"
else
  log "s3proxy: not running"
fi
rm -f "$S3_RUN/s3proxy.pid"

if [ "$clean" = 1 ]; then
  rm -rf "$S3_DATA" "$CONNECT_RUN" "$S3_RUN"
  log "removed target/seed/s3-data, connect/ and s3proxy-run/"
fi
