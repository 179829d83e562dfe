# shellcheck shell=bash
# Process helpers shared by the scripts that start Java services of their own
# (scripts/debezium/lib.sh, examples/pedidos/s3/lib.sh). The sourcing script defines
# log MESSAGE and die MESSAGE (its own prefix).

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# Pid from a pid file if that process is alive and its command line contains $2.
live_pid() {
  local f=$1 pat=$2 pid
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$pat" || return 1
  echo "$pid"
}

# SIGTERM a pid we started and wait for it to exit (SIGKILL after $2 seconds; 0: at once).
stop_pid() {
  local pid=$1 grace=${2:-60} what=$3 deadline
  kill -TERM "$pid" 2>/dev/null || return 0
  deadline=$(( $(date +%s) + grace ))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      [ "$grace" = 0 ] || log "$what: no clean exit within ${grace}s; SIGKILL $pid"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    sleep 0.1
  done
}

# Launch "$@" in its own session (so it outlives this shell), logging to $2, pid into $1.
launch() {
  local pidfile=$1 out=$2; shift 2
  rm -f "$pidfile"
  # shellcheck disable=SC2016
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" "$@" </dev/null >>"$out" 2>&1 &
  local deadline=$(( $(date +%s) + 10 ))
  until [ -s "$pidfile" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "launcher did not write $pidfile"
    sleep 0.05
  done
  cat "$pidfile"
}
