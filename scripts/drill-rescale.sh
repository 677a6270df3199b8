#!/usr/bin/env bash
# The rescale drill (issue 5): rescales running jobs through a list of
# parallelisms mid-stream and proves that nothing was lost, duplicated or read twice.
#
#   scripts/drill-rescale.sh [--events E] [--steps 2,3,1,4] [--keys K] [--build-dir DIR] [--keep]
#
#   --events E       generated events per job (default 300000)
#   --steps LIST     parallelisms, comma separated: the job starts at the first and is rescaled
#                    to each following one with scripts/rescale.sh (default 2,3,1,4)
#   --keys K         distinct keys, Zipf-skewed so windows close by count and by timeout
#                    (default 5000)
#   --splits S       generator splits, redistributed over the source subtasks (default 12)
#   --rate R         events/s of the rescaled runs (default: E spread over about
#                    --step-seconds per step plus a tail, so the job lasts through every step)
#   --step-seconds S planned time between two rescales, for the default --rate (default 3); the
#                    rescales themselves are paced by the job's progress: rescale i of n-1
#                    starts once i/(2n) of the input has been read
#   --build-dir DIR  where the binaries are: DIR/bin/keyflow* (default build/ of the repository)
#   --keep           keep the work directory (logs, checkpoints, outputs) even on PASS
#
# For each job — count-window (event time; count=100, timeout=20s) and tumbling-count (size=10s),
# both with checkpoints every 1 s — it:
#   1. runs the job once at the first parallelism without rescales (the reference; unthrottled,
#      same input and flags otherwise),
#   2. runs it again, rate-limited and held (gen:...,hold=FILE: its input ends only once the drill
#      creates FILE after the last rescale), and rescales it through the steps, each once the job
#      has read its share of the input (scripts/rescale.sh starts and stops workers as needed);
#      after each rescale it waits until the new attempt runs and
#      checks that every new subtask read on restore exactly the bytes of the key groups it now
#      owns in the savepoint it restored from (`keyflow checkpoint inspect --json`, Flink ranges
#      for P') — from `keyflow status --json` (restore_bytes) and from the worker's
#      "state restored" log line,
#   3. compares the committed output with the reference (sorted lines without "subtask"), and
#      checks that the job ran one attempt per step (no restart besides the rescales).
# The JSON is read by scripts/lib/rescale_check.py (python3).
# Prints a table per step (P -> P', key groups moved, bytes read per new subtask and expected,
# time from the rescale command to the deployed job and to records processed again), then PASS
# (exit 0) or FAIL (exit 1). Starts its own local cluster on a free port in a temp dir and stops
# everything it started on exit (also on Ctrl-C or failure); the work directory is removed
# unless --keep or FAIL.
set -euo pipefail

KF_PROG=drill-rescale
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"
CHECK="$ROOT/scripts/lib/rescale_check.py"

events=300000 steps_arg=2,3,1,4 keys=5000 splits=12 rate="" step_s=3 build_dir="$ROOT/build"
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --events) kf_need "$@"; events="$2"; shift 2 ;;
    --steps) kf_need "$@"; steps_arg="$2"; shift 2 ;;
    --keys) kf_need "$@"; keys="$2"; shift 2 ;;
    --splits) kf_need "$@"; splits="$2"; shift 2 ;;
    --rate) kf_need "$@"; rate="$2"; shift 2 ;;
    --step-seconds) kf_need "$@"; step_s="$2"; shift 2 ;;
    --build-dir) kf_need "$@"; build_dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done

# ---- validate -------------------------------------------------------------------------------
for v in events keys splits step_s; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || kf_die "--${v/step_s/step-seconds} must be a whole number >= 1"
done
[[ "$steps_arg" =~ ^[1-9][0-9]*(,[1-9][0-9]*)+$ ]] ||
  kf_die "--steps must be at least two parallelisms >= 1, comma separated (e.g. 2,3,1,4)"
IFS=, read -r -a steps <<<"$steps_arg"
for ((i = 1; i < ${#steps[@]}; i++)); do
  [ "${steps[i]}" -ne "${steps[i - 1]}" ] ||
    kf_die "--steps: consecutive parallelisms must differ (${steps[i]} twice)"
done
[ "$keys" -ge "$splits" ] || kf_die "--keys must be at least --splits ($splits)"
if [ -z "$rate" ]; then
  # E over the planned duration: a period of --step-seconds per step, about 8 s per rescale
  # (scripts/rescale.sh starting or stopping workers, the savepoint, the redeploy and this
  # drill's checks of the new attempt: measured up to ~8 s on a loaded 2-core machine, while
  # the job keeps reading), and a tail of 5 s after the last rescale.
  rate=$((events / (${#steps[@]} * step_s + (${#steps[@]} - 1) * 8 + 5)))
fi
[[ "$rate" =~ ^[1-9][0-9]*$ ]] || kf_die "--rate must be a whole number >= 1"
build_dir="$(kf_abspath "$build_dir")"
KEYFLOW="$build_dir/bin/keyflow"
for b in keyflow keyflow-coordinator keyflow-worker; do
  [ -x "$build_dir/bin/$b" ] || kf_die "$build_dir/bin/$b not found: build first (cmake -S $ROOT" \
    "-B $build_dir -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $build_dir), or pass" \
    "--build-dir"
done
command -v python3 >/dev/null || kf_die "python3 is needed to read the JSON of keyflow"

work="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-drill-rescale-XXXXXX")"
run_dir=""  # one per job: $work/run-<job>
failed=1
cleanup() {
  local d
  for d in "$work"/run-*; do
    [ -d "$d" ] && "$ROOT/scripts/stop-cluster.sh" --run-dir "$d" --timeout 5 >/dev/null 2>&1
  done
  if [ "$keep" -eq 1 ] || [ "$failed" -ne 0 ]; then
    kf_log "work directory kept: $work (process logs in $work/run-*)"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # runs the EXIT trap

now_ms() { date +%s%3N; }
say() { echo "$*"; }

# ---- cluster ----------------------------------------------------------------------------------
first="${steps[0]}"
say "drill-rescale: steps ${steps_arg}, $events events, $keys keys, $splits splits, rate" \
  "$rate/s, work dir $work"
endpoint=""
KF() { "$KEYFLOW" "$@" --coordinator "$endpoint"; }
# start_cluster: a fresh local cluster with one worker per subtask of the first step, on a free
# port. Heartbeat timeout 3 s: a loaded 2-core machine must not turn a slow heartbeat into a
# restart (which the restore-bytes check would then report).
start_cluster() {
  endpoint="$("$ROOT/scripts/start-cluster.sh" --workers "$first" --port 0 --run-dir "$run_dir" \
    --build-dir "$build_dir" --allowed-path "$work" --coordinator-arg=--heartbeat-timeout=3s \
    2>>"$work/cluster.log")" ||
    { tail -n 20 "$work/cluster.log" >&2; kf_log "could not start the cluster"; return 1; }
  kf_use_cluster_keys "$run_dir"  # the CLI's client key (KEYFLOW_KEYS)
}
stop_cluster() {
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" --timeout 5 >>"$work/cluster.log" 2>&1 || true
}
job_field() {  # job_field EXPR: python expression over `job` (the status' job object)
  KF status --json 2>/dev/null |
    python3 -c "import json,sys; job=json.load(sys.stdin).get('job') or {}; print($1)"
}

# wait_job_state STATES TIMEOUT_S: until the job's state is one of STATES (space separated).
wait_job_state() {
  local want="$1" deadline=$((SECONDS + $2)) s
  while :; do
    s="$(job_field "job.get('state','')" || true)"
    [[ " $want " == *" $s "* ]] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      kf_log "the job is '$s' after $2 s, expected one of: $want"
      return 1
    fi
    sleep 0.2  # polling period
  done
}

# wait_records_in N TIMEOUT_S: until the job has read at least N records (over all attempts)
# while RUNNING; fails if the job left RUNNING (it failed: its input is held until the last
# rescale) or the timeout passed.
wait_records_in() {
  local want="$1" deadline=$((SECONDS + $2)) got
  while :; do
    got="$(job_field "'%s %d' % (job.get('state',''), job.get('records_in',0))" || true)"
    if [ "${got%% *}" = RUNNING ] && [ "${got##* }" -ge "$want" ]; then return 0; fi
    case "${got%% *}" in
      FINISHED | FAILED | CANCELED)
        kf_log "the job is ${got%% *} after ${got##* } records, before the rescale that waits" \
          "for $want read: use more --events or a lower --rate"
        return 1 ;;
    esac
    if [ "$SECONDS" -ge "$deadline" ]; then
      kf_log "the job has read ${got##* } records after $2 s, expected $want (state ${got%% *})"
      return 1
    fi
    sleep 0.2  # polling period
  done
}

overall=0
# run_job NAME PARAMS...: reference run, rescaled run, table, comparison.
run_job() {
  local name="$1"
  shift
  local params=() p
  for p in "$@"; do params+=(--param "$p"); done
  # A fresh cluster per job, in its own run dir (logs, checkpoints).
  [ -z "$run_dir" ] || stop_cluster
  run_dir="$work/run-$name"
  start_cluster || return 1
  local input="gen:events=$events,keys=$keys,splits=$splits,seed=42,skew=1"
  local common=(--job "$name" --checkpoint-interval 1s --parallelism "$first" "${params[@]}")
  local ref="$work/$name-reference" out="$work/$name-rescaled" steps_file="$work/$name-steps.jsonl"
  : >"$steps_file"

  say ""
  say "== $name ($*): reference at parallelism $first"
  if ! KF run "${common[@]}" --input "$input" --output "$ref" --wait >"$work/$name-reference.out" \
    2>"$work/$name-reference.err"; then
    cat "$work/$name-reference.out" "$work/$name-reference.err" >&2
    kf_log "the reference run of $name failed"
    return 1
  fi
  grep -E "records processed|results emitted|late records" "$work/$name-reference.out" | sed 's/^/  /'

  # Job ids have a resolution of one second (<job>-<yyyymmdd-hhmmss>): the second run must not
  # get the reference's id (and so share its checkpoint directory).
  sleep 1
  say "== $name: rate-limited run ($rate events/s) rescaled through ${steps_arg}"
  # Held (gen:...,hold=FILE): the input does not end until the drill creates FILE after the last
  # rescale, so a fast machine cannot finish the job before the rescales it is there for.
  local hold="$work/$name-release"
  rm -f "$hold"
  KF run "${common[@]}" --input "$input,rate=$rate,hold=$hold" --output "$out" >"$work/$name-run.out" \
    2>"$work/$name-run.err" || { cat "$work/$name-run.err" >&2; kf_log "submitting $name failed"; return 1; }
  wait_job_state RUNNING 60 || return 1
  local i target old_attempt t0 t1 rc res ok=0
  for ((i = 1; i < ${#steps[@]}; i++)); do
    target="${steps[i]}"
    # Paced by the job's progress, not by the wall clock: rescale i of n-1 once the job has read
    # i/(2n) of its input (all attempts' reads counted), so every rescale happens in the first
    # half of the input however slow the machine or the previous rescale was.
    wait_records_in $((events * i / (2 * ${#steps[@]}))) $((events * 3 / rate + 120)) || return 1
    old_attempt="$(job_field "job.get('attempt',0)")"
    t0="$(now_ms)"
    rc=0
    "$ROOT/scripts/rescale.sh" "$target" --run-dir "$run_dir" --build-dir "$build_dir" \
      --timeout 120 >>"$work/$name-rescale.log" 2>&1 || rc=$?
    t1="$(now_ms)"
    if [ "$rc" -ne 0 ]; then
      tail -n 5 "$work/$name-rescale.log" >&2
      kf_log "scripts/rescale.sh $target failed (exit $rc)"
      return 1
    fi
    rc=0
    res="$(python3 "$CHECK" await-rescale --keyflow "$KEYFLOW" --endpoint "$endpoint" \
      --old-attempt "$old_attempt" --target "$target" --t0-ms "$t0" --run-dir "$run_dir" \
      --timeout 60 --need-processing)" || rc=$?
    [ -n "$res" ] || res='{"ok": false, "to_p": '"$target"', "error": "await-rescale failed"}'
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["deployed_ms"]=int(sys.argv[2]); print(json.dumps(r))' \
      "$res" "$((t1 - t0))" >>"$steps_file"
    [ "$rc" -eq 0 ] || ok=1
  done
  say ""
  python3 "$CHECK" table "$steps_file"
  say ""
  touch "$hold"  # every rescale is done: let the input end
  wait_job_state "FINISHED FAILED CANCELED" $((events * 3 / rate + 120)) || return 1
  [ "$(job_field "job.get('state','')")" = FINISHED ] ||
    { kf_log "the rescaled $name job ended $(job_field "job.get('state')"): $(job_field "job.get('failure')")"; return 1; }
  say "  rescaled run: $(job_field "'attempt %d at parallelism %d; %d records processed over all attempts (replays included), %d late' % (job.get('attempt',0), job.get('parallelism',0), job.get('records_processed',0), job.get('late_records',0))")"
  local attempts
  attempts="$(job_field "job.get('attempt',0)")"
  if [ "$attempts" -ne "${#steps[@]}" ]; then
    kf_log "the job ran $attempts attempts, expected ${#steps[@]} (one per step): it also" \
      "restarted after a failure (see $run_dir/coordinator.log)"
    ok=1
  fi
  say "  committed output vs reference: $(python3 "$CHECK" compare-outputs "$ref" "$out" || echo DIFFERENT)" |
    tee "$work/$name-compare.txt"
  grep -q "identical" "$work/$name-compare.txt" || ok=1
  return "$ok"
}

run_job count-window count=100 timeout=20s time=event || overall=1
run_job tumbling-count size=10s || overall=1

say ""
if [ "$overall" -eq 0 ]; then
  failed=0
  say "PASS"
  exit 0
fi
say "FAIL"
exit 1
