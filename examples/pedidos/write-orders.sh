#!/usr/bin/env bash
# The application side: registers COUNT orders, each in its own transaction that inserts the
# order and its outbox event together (the function registrar_pedido of schema.sql), from
# CLIENTS clients, with order times spread over SPAN seconds of simulated time from START (epoch
# seconds), in time order, about RATE orders per second of real time. Totals are 5.00 to 500.00.
# The same SEED gives the same orders with the same awk (mawk and gawk draw differently).
#
# Usage: write-orders.sh COUNT CLIENTS START SPAN [RATE] [SEED] [AGGREGATETYPE]
#   Connection: the standard PG* variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
count=$1 clients=$2 start=$3 span=$4 rate=${5:-500} seed=${6:-1} aggregatetype=${7:-pedidos}
# It becomes part of a topic name and of the SQL: letters, digits and underscores only.
[[ "$aggregatetype" =~ ^[A-Za-z0-9_]+$ ]] || { echo "write-orders.sh: bad AGGREGATETYPE '$aggregatetype'" >&2; exit 2; }
awk -v n="$count" -v c="$clients" -v t0="$start" -v span="$span" -v rate="$rate" -v seed="$seed" \
    -v agg="$aggregatetype" 'BEGIN {
  srand(seed)
  batch = 50; step = span / n
  for (i = 0; i < n; i++) {
    t = t0 + i * step + rand() * step * 0.9
    printf "SELECT registrar_pedido(%d, %.2f, to_timestamp(%.3f), '"'"'%s'"'"');\n", \
      1 + int(rand() * c), 5 + rand() * 495, t, agg
    # Pace the writes: a pause after every batch (the orders arrive while the pipeline runs).
    if (i % batch == batch - 1 && rate > 0) printf "SELECT pg_sleep(%.3f);\n", batch / rate
  }
}' | psql -X -q -v ON_ERROR_STOP=1 -o /dev/null
