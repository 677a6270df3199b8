# shellcheck shell=bash
# Shared helpers of scripts/start-cluster.sh, scripts/stop-cluster.sh and scripts/demo.sh.
# Source it; it defines functions and sets nothing else.
#
# Run directory layout (default ./.keyflow):
#   coordinator.pid            pid of the keyflow-coordinator process
#   coordinator.log            its log (--log-file; rotates: coordinator.1.log, ...)
#   coordinator.out            its stdout+stderr: startup errors, crash reports
#   coordinator.endpoint       the endpoint clients use, e.g. tcp://127.0.0.1:6123
#   keys/                      the cluster's key set (default of --keys; `keyflow keys init`)
#   cluster.env                `export KEYFLOW_KEYS=...` for the CLI (or `unset` for --insecure);
#                              with a REST server KEYFLOW_REST_URL, and on a secure cluster
#                              KEYFLOW_REST_CACERT (its certificate) and KEYFLOW_REST_TOKEN_FILE
#                              (keys/viewers/viewer.token: a read-only token; kf_rest_curl)
#   rest.port, rest.url        the REST server's port and URL
#   worker-<i>-keys/           only with --hosts, on worker i's host: coordinator.pub and
#                              workers/worker-<i>.key, nothing else (0700)
#   worker-<i>.pid             pid of worker i (slot i); with --hosts the pid on its host
#   worker-<i>.host            only with --hosts: the host worker i runs on
#   worker-<i>.log             its log (--log-file; rotates: worker-<i>.1.log, ...; with --hosts:
#                              on its host, same path)
#   worker-<i>.out             its stdout+stderr: startup errors, crash reports, the print
#                              sink's lines, the supervisor's lines (--respawn)
#   worker-<i>.supervisor.pid  only with --respawn: the supervisor that restarts worker i
#   keyflow-state/, .keyflow/  the local workers' working directory is the run dir: their
#                              RocksDB state (default --state-dir) and job library cache
#
# Modes (start-cluster.sh): the run dir is 0700, every file in it 0600 and directory 0700 (umask
# 077); with --group GROUP the run dir is GROUP's and setgid (02750), files 0640, directories
# 0750 (umask 027). The key set and the checkpoints keep their own, private modes.

kf_log() { echo "$KF_PROG: $*" >&2; }
kf_die() {
  kf_log "$*"
  exit 1
}

# kf_need OPTION [VALUE...] (an argument parser's "$@"): dies unless OPTION has a value.
kf_need() { [ $# -ge 2 ] || kf_die "$1 needs a value (try --help)"; }

# kf_usage: prints the script's header comment (line 2 up to its `set -` line) without '# '.
kf_usage() { sed -n '2,/^set -/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

# Absolute form of a path that may not exist yet.
kf_abspath() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$PWD/$1" ;;
  esac
}

# kf_pid_alive PID: true if PID runs (a zombie waiting to be reaped by init does not count).
kf_pid_alive() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state="$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)"
  [ "$state" != Z ]
}

# kf_is_keyflow_pid PID: true if PID is alive and is a keyflow process or one of our
# supervisors (guards against signalling an unrelated process that reused a stale pid).
kf_is_keyflow_pid() {
  local pid="$1" cmdline
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kf_pid_alive "$pid" || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ "$cmdline" == *keyflow* || "$cmdline" == *worker-supervisor* ]]
}

# kf_pid_from_file FILE: prints the pid stored in FILE (empty if missing or not a number).
kf_pid_from_file() {
  local pid=""
  [ -f "$1" ] && read -r pid <"$1" 2>/dev/null
  [[ "$pid" =~ ^[0-9]+$ ]] && printf '%s\n' "$pid"
  return 0
}

# kf_ssh HOST CMD: runs CMD on HOST without reading stdin and without prompting.
kf_ssh() {
  local host="$1"
  shift
  ssh -n -o BatchMode=yes -o ConnectTimeout=10 "$host" "$@"
}

# kf_remote_alive HOST PID: true if PID is a live keyflow process on HOST.
kf_remote_alive() {
  kf_ssh "$1" "tr '\\0' ' ' </proc/$2/cmdline 2>/dev/null | grep -q -e keyflow -e worker-supervisor"
}

# kf_log_excerpt FILE [LINES]: the last lines of a log, indented, for error messages.
# kf_output_file LOG: the stdout+stderr file next to a process's log file (x.log -> x.out).
kf_output_file() { printf '%s\n' "${1%.log}.out"; }

# kf_log_excerpts LOG [LINES]: the last lines of a process's log and of its stdout+stderr file
# (a startup error or a crash is only in the latter).
kf_log_excerpts() {
  local out
  out="$(kf_output_file "$1")"
  kf_log_excerpt "$1" "${2:-15}"
  if [ -s "$out" ]; then kf_log_excerpt "$out" "${2:-15}"; fi
}

kf_log_excerpt() {
  local file="$1" lines="${2:-15}"
  if [ -s "$file" ]; then
    echo "---- last $lines lines of $file ----" >&2
    tail -n "$lines" "$file" | sed 's/^/  /' >&2
    echo "----" >&2
  else
    echo "($file is empty or missing)" >&2
  fi
}

# kf_stop_pids SIGNAL_DEADLINE_SECONDS PID...: SIGTERM to every live local keyflow pid, wait
# until all are gone or the deadline passes, then SIGKILL the rest. Prints what it did.
kf_stop_pids() {
  local deadline_s="$1"
  shift
  local pids=() p
  for p in "$@"; do
    if kf_is_keyflow_pid "$p"; then
      kill -TERM "$p" 2>/dev/null && pids+=("$p")
    fi
  done
  [ ${#pids[@]} -eq 0 ] && return 0
  local end=$((SECONDS + deadline_s)) alive
  while :; do
    alive=()
    for p in "${pids[@]}"; do
      kf_pid_alive "$p" && alive+=("$p")
    done
    [ ${#alive[@]} -eq 0 ] && return 0
    if [ "$SECONDS" -ge "$end" ]; then
      kf_log "still running after ${deadline_s}s, sending SIGKILL to pid(s) ${alive[*]}"
      kill -KILL "${alive[@]}" 2>/dev/null || true
      return 0
    fi
    sleep 0.1
  done
}

# kf_stop_remote HOST PID DEADLINE: the same on another host, over ssh.
kf_stop_remote() {
  local host="$1" pid="$2" deadline_s="$3"
  kf_ssh "$host" "kill -TERM $pid 2>/dev/null || exit 0
    alive() { [ -e /proc/$pid ] && ! grep -q '^[0-9]* (.*) Z ' /proc/$pid/stat 2>/dev/null; }
    for i in \$(seq $((deadline_s * 10))); do alive || exit 0; sleep 0.1; done
    kill -KILL $pid 2>/dev/null; exit 0" ||
    kf_log "could not reach $host to stop pid $pid (ssh failed): stop it there by hand"
}

# kf_ssh_put HOST SRC DEST MODE: copies the local file SRC to DEST on HOST over ssh (stdin), with
# MODE; DEST's directory is made private (0700). Never leaves a partial DEST.
kf_ssh_put() {
  local host="$1" src="$2" dest dir
  dest="$(printf '%q' "$3")"
  dir="$(printf '%q' "$(dirname "$3")")"
  ssh -o BatchMode=yes -o ConnectTimeout=10 "$host" \
    "umask 077 && mkdir -p $dir && chmod 0700 $dir && cat >$dest.tmp && chmod $4 $dest.tmp &&
     mv -f $dest.tmp $dest" <"$src"
}

# kf_use_cluster_keys RUN_DIR: points the keyflow CLI of this shell at the cluster started from
# RUN_DIR (its RUN_DIR/cluster.env: KEYFLOW_KEYS, or none for an --insecure cluster).
kf_use_cluster_keys() {
  unset KEYFLOW_KEYS KEYFLOW_REST_URL KEYFLOW_REST_CACERT KEYFLOW_REST_TOKEN_FILE
  if [ -f "$1/cluster.env" ]; then
    # shellcheck disable=SC1091
    source "$1/cluster.env"
  fi
}

# kf_rest_curl RUN_DIR PATH [CURL_ARGS...]: curl of the REST API of the cluster of RUN_DIR
# (RUN_DIR/cluster.env): PATH (e.g. /metrics) under its URL, with its certificate pinned and its
# viewer token as `Authorization: Bearer` (from a file descriptor: the token is never on a
# command line, where `ps` would show it); with -fsS, then CURL_ARGS.
kf_rest_curl() {
  (
    kf_use_cluster_keys "$1"
    [ -n "${KEYFLOW_REST_URL:-}" ] || kf_die "the cluster of $1 has no REST server ($1/cluster.env)"
    local args=(-fsS)
    [ -z "${KEYFLOW_REST_CACERT:-}" ] || args+=(--cacert "$KEYFLOW_REST_CACERT")
    if [ -n "${KEYFLOW_REST_TOKEN_FILE:-}" ]; then
      curl "${args[@]}" -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$KEYFLOW_REST_TOKEN_FILE")") \
        "${@:3}" "$KEYFLOW_REST_URL$2"
    else
      curl "${args[@]}" "${@:3}" "$KEYFLOW_REST_URL$2"
    fi
  )
}

# kf_status_json KEYFLOW_BIN ENDPOINT [RUN_DIR]: `keyflow status --json` with the keys of the
# cluster of RUN_DIR, empty output on failure.
kf_status_json() {
  (
    [ -z "${3:-}" ] || kf_use_cluster_keys "$3"
    "$1" status --json --coordinator "$2" 2>/dev/null || true
  )
}

# kf_registered_slots: reads `keyflow status --json` on stdin, prints the registered slots,
# one per line.
kf_registered_slots() {
  python3 -c '
import json, sys
try:
    st = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for w in st.get("workers", []):
    print(w.get("slot"))
'
}

# kf_start_kafka_mock BIN_DIR DIR TOPIC:PARTITIONS...: starts keyflow-kafka-mock (librdkafka's mock
# cluster in its own process) in the background with these topics, its log in
# DIR/kafka-mock.log, and waits for its bootstrap servers; sets KF_KAFKA_MOCK_PID and
# KF_KAFKA_BOOTSTRAP ("host:port,...").
kf_start_kafka_mock() {
  local bin="$1" dir="$2" args=() t
  shift 2
  for t in "$@"; do args+=(--topic "$t"); done
  "$bin/keyflow-kafka-mock" "${args[@]}" --bootstrap-file "$dir/kafka-bootstrap" \
    >"$dir/kafka-mock.log" 2>&1 </dev/null &
  KF_KAFKA_MOCK_PID=$!
  for _ in $(seq 100); do [ -s "$dir/kafka-bootstrap" ] && break; sleep 0.1; done
  [ -s "$dir/kafka-bootstrap" ] ||
    kf_die "keyflow-kafka-mock did not start (see $dir/kafka-mock.log)"
  KF_KAFKA_BOOTSTRAP="$(cat "$dir/kafka-bootstrap")"
}
