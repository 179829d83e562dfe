#!/usr/bin/env bash
# Compares pgcdc's REST API with the Kafka Connect worker's while both run the harness's
# connector (called by run.sh when DBZ_REST_COMPARE=1): read-only calls only, so the record
# comparison is not disturbed. Each check is an exact answer (status and body, names
# substituted) or a shape (keys and value types, recursively; connector configs, whose keys
# differ by the --set lines, count as "object").
#
# Usage: rest-compare.sh CONNECT_URL PGCDC_URL NAME [changes]
# Output: one line per check; exit 1 when one differs.
# With "changes" (run.sh calls it so once the records are compared), the calls that change
# state instead: pause, resume, the restarts, stop, and the offsets of the stopped connector,
# read and reset; after each, both sides are waited for until they reach the state asked.
# Not compared: answers where the standalone worker the harness runs differs from a
# distributed one (pgcdc follows the distributed worker's: tests/rest.rs checks those texts).
set -euo pipefail
CONNECT=$1 PGCDC=$2 NAME=$3 MODE=${4:-reads}
fails=0

# answer URL [METHOD [BODY]]: "<status> <body>"
answer() {
  local url=$1 method=${2:-GET} body=${3:-}
  local out code
  out=$(mktemp)
  if [ -n "$body" ]; then
    code=$(curl -sS --max-time 30 -o "$out" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' --data "$body" "$url")
  else
    code=$(curl -sS --max-time 30 -o "$out" -w '%{http_code}' -X "$method" "$url")
  fi
  printf '%s %s' "$code" "$(cat "$out")"
  rm -f "$out"
}

# The shape of JSON on stdin: objects keep their keys (sorted) with the shapes of their values,
# arrays the shape of their first element, scalars their type; "config" objects are "object".
SHAPE='def shape: if type == "object" then with_entries(if .key == "config" then .value = "object" else .value |= shape end)
  elif type == "array" then (if length == 0 then [] else [.[0] | shape] end) else type end; shape'

report() {
  if [ "$2" = "$3" ]; then
    printf 'rest: same   %s\n' "$1"
  else
    printf 'rest: DIFFERENT %s\n  connect: %s\n  pgcdc:   %s\n' "$1" "$2" "$3"
    fails=$((fails + 1))
  fi
}

# exact PATH [METHOD [BODY]]: the same status and body.
exact() {
  report "$2 ${1} (exact)" "$(answer "$CONNECT$1" "${2:-GET}" "${3:-}")" "$(answer "$PGCDC$1" "${2:-GET}" "${3:-}")"
}

# shaped PATH [JQ_PREFIX]: the same status and the same shape (after an optional jq filter).
shaped() {
  local filter="${2:-.}" a b
  a=$(answer "$CONNECT$1"); b=$(answer "$PGCDC$1")
  report "GET $1 (shape of $filter)" \
    "${a%% *} $(printf '%s' "${a#* }" | jq -c "$filter | $SHAPE")" \
    "${b%% *} $(printf '%s' "${b#* }" | jq -c "$filter | $SHAPE")"
}

# wait_state STATE [TASK_STATE]: until both sides' status shows it (up to 60 s).
wait_state() {
  local want=$1 task=${2:-} side url s
  for side in "$CONNECT" "$PGCDC"; do
    url="$side/connectors/$NAME/status"
    for _ in $(seq 1 300); do
      s=$(curl -sS --max-time 10 "$url" | jq -r '[.connector.state, (.tasks[0].state // "")] | join(" ")' 2>/dev/null || true)
      [ "$s" = "$want $task" ] && break
      sleep 0.2
    done
    [ "$s" = "$want $task" ] || { echo "rest: $side never reached $want $task (last: $s)"; fails=$((fails + 1)); }
  done
}

# changed PATH METHOD [JQ]: the same status, and the same body (or its shape with JQ).
changed() {
  local path=$1 method=$2 filter=${3:-} a b
  a=$(answer "$CONNECT$path" "$method"); b=$(answer "$PGCDC$path" "$method")
  if [ -n "$filter" ]; then
    report "$method $path (shape of $filter)" \
      "${a%% *} $(printf '%s' "${a#* }" | jq -c "$filter | $SHAPE")" \
      "${b%% *} $(printf '%s' "${b#* }" | jq -c "$filter | $SHAPE")"
  else
    report "$method $path (exact)" "$a" "$b"
  fi
}

if [ "$MODE" = changes ]; then
  changed "/connectors/$NAME/pause" PUT
  wait_state PAUSED PAUSED
  shaped "/connectors/$NAME/status"
  changed "/connectors/$NAME/resume" PUT
  wait_state RUNNING RUNNING
  changed "/connectors/$NAME/restart" POST
  wait_state RUNNING RUNNING
  changed "/connectors/$NAME/tasks/0/restart" POST
  wait_state RUNNING RUNNING
  changed "/connectors/$NAME/restart?includeTasks=true&onlyFailed=true" POST .
  wait_state RUNNING RUNNING
  # Topic tracking: a reset empties the list (nothing is written meanwhile). After the restarts
  # above, Debezium may still be delivering the last transaction again, and that late delivery
  # puts its topic back on Connect's list: reset Connect until its list stays empty for a
  # second (up to five times) before comparing.
  for _ in 1 2 3 4 5; do
    curl -sS --max-time 10 -X PUT "$CONNECT/connectors/$NAME/topics/reset" >/dev/null || true
    sleep 1
    topics=$(curl -sS --max-time 10 "$CONNECT/connectors/$NAME/topics" | jq -c ".\"$NAME\".topics" || true)
    [ "$topics" = "[]" ] && break
  done
  changed "/connectors/$NAME/topics/reset" PUT
  exact "/connectors/$NAME/topics" GET
  exact /connectors/nope/topics/reset PUT
  changed "/connectors/$NAME/stop" PUT
  wait_state STOPPED
  shaped "/connectors/$NAME/status"
  exact "/connectors/$NAME/tasks/0/status" GET
  shaped "/connectors/$NAME/offsets" '.offsets[0].partition'
  changed "/connectors/$NAME/offsets" DELETE
  exact "/connectors/$NAME/offsets" GET
  if [ "$fails" -gt 0 ]; then
    echo "rest: $fails answer(s) differ from Kafka Connect's" >&2
    exit 1
  fi
  echo "rest: every compared state change matches Kafka Connect's"
  exit 0
fi

exact /connectors GET
exact /health GET
exact /connector-plugins GET
exact /connectors/nope GET
exact /connectors/nope/config GET
exact /connectors/nope/status GET
exact /connectors/nope/tasks/0/status GET
exact "/connectors/$NAME/tasks/2/status" GET
exact /connectors/nope/topics GET
exact /connectors/nope/config PATCH '{"a":"b"}'
exact /connectors/nope/pause PUT
exact /connectors/nope/resume PUT
exact /nonexistent-path GET
exact / DELETE
shaped / 'keys'
shaped "/connectors/$NAME"
shaped "/connectors/$NAME/status"
shaped "/connectors/$NAME/tasks"
shaped "/connectors/$NAME/tasks/0/status"
shaped "/connectors/$NAME/topics" 'keys'
# Both workers store the position only after their first offset flush: wait for it (up to 60 s)
# on each side, so the comparison is of stored positions, not of how soon each flushed.
has_offsets() { answer "$1/connectors/$NAME/offsets" | grep -q '"partition"'; }
for _ in $(seq 1 300); do
  has_offsets "$CONNECT" && has_offsets "$PGCDC" && break
  sleep 0.2
done
shaped "/connectors/$NAME/offsets" '.offsets[0].partition'
shaped "/connectors?expand=status"
shaped "/connectors?expand=info"
shaped "/connectors?expand=status&expand=info"
shaped /admin/loggers/root
# Validation: the same top-level keys and the same keys in a config entry.
bogus='{"connector.class":"io.debezium.connector.postgresql.PostgresConnector","name":"v","snapshot.mode":"bogus"}'
path=/connector-plugins/io.debezium.connector.postgresql.PostgresConnector/config/validate
a=$(answer "$CONNECT$path" PUT "$bogus"); b=$(answer "$PGCDC$path" PUT "$bogus")
vshape='[keys, (.configs[0] | keys), (.configs[0].definition | keys), (.configs[0].value | keys), (.configs | map(select(.value.name == "snapshot.mode"))[0].value.errors | length)]'
report "PUT $path (keys, and one error on snapshot.mode)" \
  "${a%% *} $(printf '%s' "${a#* }" | jq -c "$vshape")" "${b%% *} $(printf '%s' "${b#* }" | jq -c "$vshape")"

if [ "$fails" -gt 0 ]; then
  echo "rest: $fails answer(s) differ from Kafka Connect's" >&2
  exit 1
fi
echo "rest: every compared answer matches Kafka Connect's"
