#!/usr/bin/env bash
# Stops the keyflow cluster started by scripts/start-cluster.sh from a run dir: first the worker
# supervisors (--respawn), then the workers, then the coordinator, each by the pid in its pid
# file: SIGTERM, wait up to --timeout seconds, then SIGKILL. Removes the pid files, keeps the
# logs and the key set (RUN_DIR/keys: the next start reuses it). Idempotent: with nothing running
# it says so and succeeds.
#
#   scripts/stop-cluster.sh [--run-dir DIR] [--timeout S]
#
#   --run-dir DIR   the run dir given to start-cluster.sh (default ./.keyflow)
#   --timeout S     seconds to wait after SIGTERM before SIGKILL (default 10)
#
# Workers started over ssh (--hosts) are stopped over ssh on their host.
set -euo pipefail

KF_PROG=stop-cluster
# The checkout, or PREFIX/share/keyflow of an installation (bin/keyflow-start-cluster and
# bin/keyflow-stop-cluster are symlinks to these scripts there).
ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

run_dir=".keyflow" timeout_s=10
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --run-dir) kf_need "$@"; run_dir="$2"; shift 2 ;;
    --timeout) kf_need "$@"; timeout_s="$2"; shift 2 ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done
[[ "$timeout_s" =~ ^[0-9]+$ ]] || kf_die "--timeout must be a whole number of seconds"
run_dir="$(kf_abspath "$run_dir")"

shopt -s nullglob
existing=()
for f in "$run_dir"/coordinator.pid "$run_dir"/worker-*.pid; do [ -f "$f" ] && existing+=("$f"); done
if [ ${#existing[@]} -eq 0 ]; then
  kf_log "no cluster running from $run_dir (no pid files)"
  rm -f "$run_dir/coordinator.endpoint" "$run_dir"/worker-*.host 2>/dev/null || true
  exit 0
fi

host_of() {  # host_of worker-<i>: its host if started over ssh, else nothing
  [ -f "$run_dir/$1.host" ] && cat "$run_dir/$1.host"
  return 0
}

# stop_group KIND FILE...: stops the processes of the given pid files (local ones together, so
# they share one deadline), then removes the files.
stop_group() {
  local kind="$1" f pid name host local_pids=() described=()
  shift
  for f in "$@"; do
    pid="$(kf_pid_from_file "$f")"
    name="$(basename "$f" .pid)"
    host="$(host_of "${name%.supervisor}")"
    if [ -z "$pid" ]; then
      :
    elif [ -n "$host" ]; then
      kf_stop_remote "$host" "$pid" "$timeout_s"
      described+=("$name=$pid@$host")
    elif kf_is_keyflow_pid "$pid"; then
      local_pids+=("$pid")
      described+=("$name=$pid")
    fi
  done
  kf_stop_pids "$timeout_s" ${local_pids[@]+"${local_pids[@]}"}
  rm -f "$@"
  [ ${#described[@]} -eq 0 ] || kf_log "stopped $kind: ${described[*]}"
}

supervisors=("$run_dir"/worker-*.supervisor.pid)
stop_group supervisors ${supervisors[@]+"${supervisors[@]}"}

workers=()
for f in "$run_dir"/worker-*.pid; do
  case "$f" in *.supervisor.pid) continue ;; esac
  workers+=("$f")
done
# A respawned worker on another host keeps its pid file there: fetch the current pid.
for f in "$run_dir"/worker-*.host; do
  name="$(basename "$f" .host)"
  host="$(cat "$f")"
  if [ ! -f "$run_dir/$name.pid" ]; then
    pid="$(kf_ssh "$host" "cat $(printf '%q' "$run_dir/$name.pid") 2>/dev/null" || true)"
    if [[ "$pid" =~ ^[0-9]+$ ]]; then
      echo "$pid" >"$run_dir/$name.pid"
      workers+=("$run_dir/$name.pid")
    fi
  fi
done
stop_group workers ${workers[@]+"${workers[@]}"}

if [ -f "$run_dir/coordinator.pid" ]; then
  stop_group coordinator "$run_dir/coordinator.pid"
fi
rm -f "$run_dir/coordinator.endpoint" "$run_dir"/worker-*.host
kf_log "cluster in $run_dir stopped (logs kept there)"
