#!/usr/bin/env bash
# Rescales the running job of a local cluster started by scripts/start-cluster.sh to P' subtasks:
#   P' > workers: starts workers for the new slots (supervised if the cluster uses --respawn),
#                 waits until they are registered, then `keyflow rescale P'`;
#   P' < workers: `keyflow rescale P'` first, then stops the workers of slots >= P'.
# Returns once the job runs at P' (exit 0), or exits 1 with the reason (the job keeps running at
# its old parallelism when the rescale itself was refused).
#
#   scripts/rescale.sh P' [--run-dir DIR] [--port PORT] [--build-dir DIR] [--timeout SECONDS]
#                         [--via auto|checkpoint|savepoint]
#
# --via: what the new subtasks restore from (`keyflow rescale --via`; default auto: a checkpoint
# with --state-backend rocksdb, a savepoint with heap).
#
# The run dir and port are the ones start-cluster.sh was given (defaults ./.keyflow and the
# endpoint recorded in the run dir). Clusters on several hosts (--hosts) are not handled here:
# start or stop the workers there, then run `keyflow rescale P'`.
set -euo pipefail
KF_PROG=rescale
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
target="" run_dir=".keyflow" port="" build_dir="$ROOT/build" timeout_s=120 via=()
while [ $# -gt 0 ]; do
  case "$1" in
    --run-dir) run_dir="${2:?--run-dir needs a directory}"; shift 2 ;;
    --port) port="${2:?--port needs a number}"; shift 2 ;;
    --build-dir) build_dir="${2:?--build-dir needs a directory}"; shift 2 ;;
    --timeout) timeout_s="${2:?--timeout needs seconds}"; shift 2 ;;
    --via) via=(--via "${2:?--via needs auto, checkpoint or savepoint}"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) kf_die "unknown option '$1' (try --help)" ;;
    *) [ -z "$target" ] || kf_die "only one P' may be given"; target="$1"; shift ;;
  esac
done
if ! [[ "$target" =~ ^[0-9]+$ ]] || [ "$target" -lt 1 ]; then
  kf_die "P' must be a whole number >= 1 (try --help)"
fi
run_dir="$(kf_abspath "$run_dir")"
[ -d "$run_dir" ] || kf_die "no cluster run directory $run_dir (start one with scripts/start-cluster.sh)"
ls "$run_dir"/worker-*.host >/dev/null 2>&1 && kf_die "this cluster runs workers on other hosts" \
  "(--hosts): start or stop workers there yourself, then run keyflow rescale $target"
KEYFLOW="$build_dir/bin/keyflow"
WORKER="$build_dir/bin/keyflow-worker"
SUPERVISOR="$ROOT/scripts/lib/worker-supervisor.sh"
if [ ! -x "$KEYFLOW" ] || [ ! -x "$WORKER" ]; then
  kf_die "no keyflow build in $build_dir (run scripts/test.sh or cmake --build build)"
fi
if [ -n "$port" ]; then
  endpoint="tcp://127.0.0.1:$port"
else
  [ -f "$run_dir/coordinator.endpoint" ] || kf_die "$run_dir has no coordinator.endpoint; pass --port"
  endpoint="$(cat "$run_dir/coordinator.endpoint")"
fi

# The cluster's keys (start-cluster.sh wrote RUN_DIR/cluster.env): the CLI reads KEYFLOW_KEYS; new
# workers get --keys/--key-name (a missing worker key is added), or --insecure.
kf_use_cluster_keys "$run_dir"
worker_security() {  # worker_security I: into the array `sec`
  if [ -z "${KEYFLOW_KEYS:-}" ]; then
    sec=(--insecure)
    return
  fi
  if [ ! -e "$KEYFLOW_KEYS/workers/worker-$1.key" ]; then
    "$KEYFLOW" keys add-worker "worker-$1" --keys "$KEYFLOW_KEYS" >/dev/null ||
      kf_die "could not add the key of worker-$1 to $KEYFLOW_KEYS"
    # The running coordinator admits the new key once it re-read its trusted keys.
    "$KEYFLOW" keys reload --coordinator "$endpoint" --keys "$KEYFLOW_KEYS" >/dev/null ||
      kf_die "could not make the coordinator at $endpoint reload its keys (keyflow keys reload)"
  fi
  sec=(--keys "$KEYFLOW_KEYS" --key-name "worker-$1")
}

# Workers of this run dir, by slot.
live_slots() {
  local f i pid
  for f in "$run_dir"/worker-*.pid; do
    [ -e "$f" ] || continue
    i="${f##*/worker-}"; i="${i%.pid}"
    [[ "$i" =~ ^[0-9]+$ ]] || continue
    pid="$(kf_pid_from_file "$f")"
    { [ -n "$pid" ] && kf_pid_alive "$pid"; } || [ -f "$run_dir/worker-$i.supervisor.pid" ] && echo "$i"
  done | sort -n
}
respawn=0
ls "$run_dir"/worker-*.supervisor.pid >/dev/null 2>&1 && respawn=1
mapfile -t slots < <(live_slots)
current=${#slots[@]}
status="$("$KEYFLOW" status --json --coordinator "$endpoint" 2>/dev/null)" ||
  kf_die "cannot reach the coordinator at $endpoint (is the cluster running?)"
job_p="$(python3 -c 'import json,sys; j=json.load(sys.stdin).get("job") or {}; print(j.get("parallelism",0) if j.get("state")=="RUNNING" else -1)' <<<"$status")"
[ "$job_p" -ge 1 ] || kf_die "no RUNNING job on $endpoint to rescale"
kf_log "job runs at parallelism $job_p on $current worker(s); rescaling to $target"
start=$(date +%s%N)

# ---- scale out: start the missing workers first --------------------------------------------
if [ "$target" -gt "$current" ]; then
  # Data host of the new workers: as the others were started (local cluster: loopback).
  for ((i = 0; i < target; i++)); do
    printf '%s\n' "${slots[@]}" | grep -qx "$i" && continue
    log="$run_dir/worker-$i.log"
    out="$(kf_output_file "$log")"  # its stdout+stderr, as start-cluster.sh does
    worker_security "$i"
    cmd=("$WORKER" --coordinator "$endpoint" --slot "$i" --data-host 127.0.0.1 "${sec[@]}"
      --log-file "$log")
    if [ "$respawn" -eq 1 ]; then
      (exec setsid nohup "$SUPERVISOR" --pid-file "$run_dir/worker-$i.pid" --log "$out" -- \
        "${cmd[@]}" >/dev/null 2>&1 </dev/null) &
      echo $! >"$run_dir/worker-$i.supervisor.pid"
    else
      (exec setsid nohup "${cmd[@]}" >>"$out" 2>&1 </dev/null) &
      echo $! >"$run_dir/worker-$i.pid"
    fi
    kf_log "started worker for slot $i"
  done
  deadline=$((SECONDS + 30))
  while :; do
    registered="$(kf_status_json "$KEYFLOW" "$endpoint" | kf_registered_slots)"
    missing=0
    for ((i = 0; i < target; i++)); do grep -qx "$i" <<<"$registered" || missing=$((missing + 1)); done
    [ "$missing" -eq 0 ] && break
    [ "$SECONDS" -lt "$deadline" ] || kf_die "$missing new worker(s) did not register within 30 s" \
      "(see $run_dir/worker-*.log and worker-*.out); the job keeps running at parallelism $job_p"
    sleep 0.2
  done
fi

# ---- rescale ------------------------------------------------------------------------------
if ! "$KEYFLOW" rescale "$target" "${via[@]}" --coordinator "$endpoint" --timeout "${timeout_s}s"; then
  kf_die "the rescale to $target failed (see above); the coordinator log is $run_dir/coordinator.log"
fi
elapsed_ms=$((($(date +%s%N) - start) / 1000000))

# ---- scale in: stop the workers that no longer run a subtask ---------------------------------
if [ "$target" -lt "$current" ]; then
  for i in "${slots[@]}"; do
    [ "$i" -ge "$target" ] || continue
    sup="$(kf_pid_from_file "$run_dir/worker-$i.supervisor.pid")"
    [ -z "$sup" ] || kf_stop_pids 10 "$sup"
    pid="$(kf_pid_from_file "$run_dir/worker-$i.pid")"
    [ -z "$pid" ] || kf_stop_pids 10 "$pid"
    rm -f "$run_dir/worker-$i.pid" "$run_dir/worker-$i.supervisor.pid"
    kf_log "stopped the worker of slot $i"
  done
fi

final="$("$KEYFLOW" status --json --coordinator "$endpoint" 2>/dev/null || true)"
now_p="$(python3 -c 'import json,sys; j=json.load(sys.stdin).get("job") or {}; print(j.get("state"), j.get("parallelism"))' <<<"$final")"
[ "$now_p" = "RUNNING $target" ] || [ "${now_p%% *}" = "FINISHED" ] ||
  kf_die "after the rescale the job is '$now_p', expected RUNNING $target"
kf_log "job runs at parallelism $target (${elapsed_ms} ms from command to processing again)"
