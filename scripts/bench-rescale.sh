#!/usr/bin/env bash
# Rescaling performance (issue 5): a job with ~10 M keys of state (one window, i.e. one
# ValueState entry and one event-time timer per key) rescaled 1 -> 2 and 2 -> 1 on a local
# cluster. Targets: time from `keyflow rescale P'` to processing again <= 10 s; each new
# subtask reads <= its share of the state + 5 %.
#
#   scripts/bench-rescale.sh [--quick] [--keys N] [--splits S] [--tail-rate R]
#                            [--state-backend B] [--checkpoint-interval I] [--via V]
#                            [--build-dir DIR] [--keep]
#
#   --quick          a smoke run: --keys 100000 unless given (numbers not comparable to the
#                    targets; scripts/bench.sh --quick --rocksdb runs it so)
#   --keys N         distinct keys to load (default 10000000)
#   --splits S       generator splits (default 4)
#   --tail-rate R    events/s of the slow tail the job runs on while it is rescaled (default 2000)
#   --state-backend B  heap (default) or rocksdb (issue 11; --state-dir in the work directory)
#   --checkpoint-interval I  periodic checkpoints of the job on the tail (default 0: none), so
#                    that the rescale's checkpoint is incremental, as in production
#   --via V          `keyflow rescale --via V`: auto (default: a checkpoint with rocksdb, a
#                    savepoint with heap), checkpoint or savepoint
#   --build-dir DIR  where the binaries are: DIR/bin/keyflow* (default build/ of the repository)
#   --keep           keep the work directory (logs, savepoints) — several GB at the default size
#
# How (the state has to be loaded fast, but the job has to keep running):
#   1. load: count-window in event time with count=1000000000 and timeout=3650d, so every window
#      stays open, at P = 1 on `gen:` input with K = 1.582 N keys drawn uniformly (N distinct
#      keys after K events), unthrottled; once K records are processed, a savepoint, then cancel;
#   2. the same job from that savepoint with the same generator splits, throttled to --tail-rate
#      (a split's position is an event index, so the rate may change): it restores all state at
#      P = 1 (measured too), then runs on the slow tail;
#   3. `keyflow rescale 2`, then `keyflow rescale 1` (both workers are registered beforehand):
#      time to the command's return (the new attempt is deployed), to the first status that shows
#      every new subtask's restore done with exactly the bytes of its key groups and records
#      processed again (status every 200 ms), the time of the rescale's checkpoint or savepoint
#      (coordinator log), each subtask's restore time and bytes (worker logs: with RocksDB's
#      native snapshots only the timers' bytes are counted), and the workers' RSS (VmRSS and
#      peak VmHWM from /proc). The old attempt keeps processing while the snapshot is written,
#      so "processing paused" = (command to processing again) - (snapshot time).
# By default no periodic checkpoints: the rescale's snapshot is the only one (with RocksDB a
# first checkpoint: every SST file is written), so nothing else competes for the disk.
# Heartbeat timeout 5 s (default 1 s): snapshots of GBs
# must not be mistaken for lost workers on a loaded 2-core machine. Prints a markdown table and
# PASS/FAIL against the targets (exit 0/1). Stops everything it started on exit.
set -Eeuo pipefail  # -E: the ERR trap below also covers functions

KF_PROG=bench-rescale
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"
CHECK="$ROOT/scripts/lib/rescale_check.py"

keys="" quick=0 splits=4 tail_rate=2000 build_dir="$ROOT/build" keep=0 backend=heap
interval=0 via=()
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --quick) quick=1; shift ;;
    --keys) kf_need "$@"; keys="$2"; shift 2 ;;
    --splits) kf_need "$@"; splits="$2"; shift 2 ;;
    --tail-rate) kf_need "$@"; tail_rate="$2"; shift 2 ;;
    --state-backend) kf_need "$@"; backend="$2"; shift 2 ;;
    --checkpoint-interval) kf_need "$@"; interval="$2"; shift 2 ;;
    --via) kf_need "$@"; via=(--via "$2"); shift 2 ;;
    --build-dir) kf_need "$@"; build_dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done
[ -n "$keys" ] || { [ "$quick" -eq 1 ] && keys=100000; } || keys=10000000
for v in keys splits tail_rate; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || kf_die "--${v/_/-} must be a whole number >= 1"
done
[ "$backend" = heap ] || [ "$backend" = rocksdb ] ||
  kf_die "--state-backend must be heap or rocksdb, not '$backend'"
build_dir="$(kf_abspath "$build_dir")"
KEYFLOW="$build_dir/bin/keyflow"
for b in keyflow keyflow-coordinator keyflow-worker; do
  [ -x "$build_dir/bin/$b" ] || kf_die "$build_dir/bin/$b not found: build first (Release), or" \
    "pass --build-dir"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-bench-rescale-XXXXXX")"
run_dir="$work/run"
measured=0  # 1 once every step ran (the targets may still be missed)
cleanup() {
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" --timeout 10 >/dev/null 2>&1 || true
  if [ "$keep" -eq 1 ]; then
    kf_log "work directory kept: $work"
  elif [ "$measured" -eq 0 ]; then
    kf_log "a step failed: its logs are kept in $work (cluster logs in $run_dir)"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # runs the EXIT trap
# Any other failing command (set -e): say where (cleanup then says where the logs are).
trap 'rc_=$?; [ "$BASH_SUBSHELL" -gt 0 ] || kf_log "failed at scripts/bench-rescale.sh line $LINENO (exit $rc_)"' ERR

now_ms() { date +%s%3N; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
say() { echo "bench-rescale: $*" >&2; }

# K keys drawn uniformly K times leave K (1 - 1/e) distinct ones: K = N / 0.632.
space=$(((keys * 1000 + 631) / 632))
gen="gen:events=$((space * 20)),keys=$space,splits=$splits,seed=11"
job=(--job count-window --param count=1000000000 --param timeout=3650d --param time=event)
[ "$backend" = heap ] || job+=(--state-backend "$backend" --state-dir "$work/state")

endpoint="$("$ROOT/scripts/start-cluster.sh" --workers 2 --port 0 --run-dir "$run_dir" \
  --build-dir "$build_dir" --allowed-path "$work" --coordinator-arg=--heartbeat-timeout=5s \
  2>"$work/start-cluster.log")" ||
  { cat "$work/start-cluster.log" >&2; kf_die "could not start the cluster (logs in $run_dir)"; }
kf_use_cluster_keys "$run_dir"  # the CLI's client key (KEYFLOW_KEYS)
KF() { "$KEYFLOW" "$@" --coordinator "$endpoint"; }
job_field() {  # job_field EXPR: python expression over `job` (the status' job object)
  local try out
  for try in 1 2 3; do
    if out="$(KF status --json 2>"$work/status.err" | python3 -c "
import json, sys
try:
    job = json.load(sys.stdin).get('job') or {}
except ValueError:
    sys.exit(1)
print($1)")"; then
      printf '%s\n' "$out"
      return 0
    fi
    sleep 0.2  # the coordinator may be busy: retry a few times
  done
  kf_die "keyflow status --json at $endpoint printed no status ($(tail -n 1 "$work/status.err")); logs in $run_dir"
}
rss() {  # rss: "slot i: VmRSS (peak VmHWM)" of every worker of the run dir
  local f i pid out=""
  for f in "$run_dir"/worker-*.pid; do
    i="${f##*/worker-}"; i="${i%.pid}"
    pid="$(kf_pid_from_file "$f")"
    [ -n "$pid" ] || continue
    out+="worker $i: $(awk '/^VmRSS/{r=$2} /^VmHWM/{h=$2} END{printf "%.2f GiB (peak %.2f GiB)", r/1048576, h/1048576}' \
      "/proc/$pid/status" 2>/dev/null); "
  done
  echo "${out%; }"
}
results="$work/results.jsonl"
: >"$results"
record() {  # record KEY JSON_VALUE: one line of the results file
  echo "{\"$1\": $2}" >>"$results"
}

# ---- 1. load --------------------------------------------------------------------------------
say "loading: $space keys drawn $space times (about $keys distinct) at P=1; load average $(loadavg)"
t0=$(now_ms)
KF run "${job[@]}" --checkpoint-interval 0 --input "$gen" --parallelism 1 >/dev/null \
  2>"$work/load.err" ||
  { cat "$work/load.err" >&2; kf_die "submitting the load job failed"; }
while :; do
  # -1 while it deploys, -2 once it ended (FINISHED, FAILED, CANCELED) or restarts
  processed="$(job_field "job.get('records_processed',0) if job.get('state')=='RUNNING' else
    -1 if job.get('state') in (None, 'DEPLOYING') else -2")"
  [ "$processed" -ne -2 ] ||
    kf_die "the load job stopped running ($(job_field "job.get('state'), job.get('failure')")); logs in $run_dir"
  [ "$processed" -lt "$space" ] || break
  sleep 0.2  # polling period
done
t1=$(now_ms)
say "loaded $processed records in $(((t1 - t0) / 1000)) s ($((processed * 1000 / (t1 - t0))) records/s); $(rss)"
record load "{\"records\": $processed, \"ms\": $((t1 - t0)), \"rss\": \"$(rss)\"}"
KF savepoint --dir "$work/loaded" --timeout 30min >"$work/savepoint.out" 2>&1 ||
  { cat "$work/savepoint.out" >&2; kf_die "the savepoint of the loaded state failed"; }
t2=$(now_ms)
KF cancel >/dev/null
state="$("$KEYFLOW" checkpoint inspect "$work/loaded" --json 2>"$work/inspect.err" | python3 -c '
import json, sys
try:
    t = json.load(sys.stdin)["totals"]
except (ValueError, KeyError):
    sys.exit(1)
print("%d %d %d" % (t["bytes"], t["keys"], t["timers"]))')" ||
  { cat "$work/inspect.err" >&2; kf_die "keyflow checkpoint inspect $work/loaded --json failed"; }
read -r state_bytes state_keys state_timers <<<"$state"
say "savepoint: $state_keys keys, $state_timers timers, $state_bytes bytes in $((t2 - t1)) ms"
record loaded "{\"bytes\": $state_bytes, \"keys\": $state_keys, \"timers\": $state_timers, \"savepoint_ms\": $((t2 - t1))}"

# ---- 2. restore at P=1 on the slow tail --------------------------------------------------------
t0=$(now_ms)
KF run "${job[@]}" --checkpoint-interval "$interval" --input "$gen,rate=$tail_rate" \
  --parallelism 1 --from-savepoint "$work/loaded" >/dev/null 2>"$work/tail.err" || { cat "$work/tail.err" >&2; kf_die "restoring the state failed"; }
res="$(python3 "$CHECK" await-rescale --keyflow "$KEYFLOW" --endpoint "$endpoint" --old-attempt 0 \
  --target 1 --t0-ms "$t0" --run-dir "$run_dir" --timeout 600 --need-processing \
  --checkpoint-dir "$work/loaded")" ||
  { echo "$res" >&2; kf_die "the restored job did not come up"; }
record restore "$res"
say "restored at P=1: $(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%s bytes, %s ms to processing (restore %s ms)" % (r["actual"], r["processing_ms"], r["log_ms"]))' "$res"); $(rss)"

# ---- 3. rescale 1 -> 2 -> 1 -----------------------------------------------------------------
ok=0
for target in 2 1; do
  sleep 3  # let the tail run at the current parallelism (pacing, not synchronisation)
  if [ "$interval" != 0 ]; then
    # A checkpoint of this attempt first: the rescale's is then incremental on top of it.
    waited=0
    until [ "$(job_field "int(job.get('checkpoints',{}).get('latest_completed',0) > job.get('restored_from',0))")" = 1 ]; do
      [ "$waited" -lt 3000 ] || kf_die "no checkpoint of the attempt completed in 600 s; logs in $run_dir"
      sleep 0.2  # polling period
      waited=$((waited + 1))
    done
  fi
  old_attempt="$(job_field "job.get('attempt',0)")"
  from="$(job_field "job.get('parallelism',0)")"
  say "rescaling $from -> $target; load average $(loadavg)"
  t0=$(now_ms)
  KF rescale "$target" "${via[@]}" --timeout 30min >"$work/rescale-$target.out" 2>&1 ||
    { cat "$work/rescale-$target.out" >&2; kf_die "keyflow rescale $target failed"; }
  t1=$(now_ms)
  rc=0
  res="$(python3 "$CHECK" await-rescale --keyflow "$KEYFLOW" --endpoint "$endpoint" \
    --old-attempt "$old_attempt" --target "$target" --t0-ms "$t0" --run-dir "$run_dir" \
    --timeout 600 --need-processing)" || rc=$?
  [ -n "$res" ] || kf_die "waiting for the rescale to $target failed (message above); logs in $run_dir"
  [ "$rc" -eq 0 ] || ok=1
  # The coordinator's own timings of this rescale: checkpoint or savepoint taken, new attempt
  # deployed.
  sp_ms="$(sed -n 's/.*rescale \(savepoint\|checkpoint\) taken .* ms=\([0-9]*\):.*/\2/p' \
    "$run_dir/coordinator.log" | tail -n 1)"
  done_ms="$(sed -n 's/.*rescale done .* ms=\([0-9]*\).*/\1/p' "$run_dir/coordinator.log" | tail -n 1)"
  res="$(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
r.update(deployed_ms=int(sys.argv[2]), savepoint_ms=int(sys.argv[3] or -1),
         coordinator_done_ms=int(sys.argv[4] or -1), rss=sys.argv[5], load=sys.argv[6])
print(json.dumps(r))' "$res" "$((t1 - t0))" "$sp_ms" "$done_ms" "$(rss)" "$(loadavg)")"
  record "rescale_${from}_to_$target" "$res"
  say "$from -> $target: $(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%s %s ms, deployed %s ms, processing again %s ms; read %s (expected %s); restore ms %s" % (r.get("savepoint_type"), r["savepoint_ms"], r["deployed_ms"], r.get("processing_ms"), r.get("actual"), r.get("expected"), r.get("log_ms")))' "$res"); $(rss)"
done
KF cancel >/dev/null 2>&1 || true

# ---- report ---------------------------------------------------------------------------------
measured=1
python3 - "$results" <<'EOF' || ok=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = {k: v for row in rows for k, v in row.items()}
gib = lambda b: ("%.2f GiB" % (b / 2**30)) if b >= 2**30 else ("%.1f MiB" % (b / 2**20))
print()
print("load: %d records in %.1f s; savepoint of the loaded state: %s (%d keys, %d timers) in %.1f s"
      % (r["load"]["records"], r["load"]["ms"] / 1e3, gib(r["loaded"]["bytes"]),
         r["loaded"]["keys"], r["loaded"]["timers"], r["loaded"]["savepoint_ms"] / 1e3))
print("restore of all of it at P=1: %.1f s from `keyflow run --from-savepoint` to processing"
      % (r["restore"]["processing_ms"] / 1e3))
print()
kind = (r.get("rescale_1_to_2") or {}).get("savepoint_type") or "snapshot"
print(("| rescale | KIND (job still running) | deployed (command returns) | processing again "
       "| target <= 10 s | processing paused | bytes read per new subtask (share + 5 %) | restore "
       "per subtask | worker RSS after (peak) | load avg |").replace("KIND", kind))
print("|---|---|---|---|---|---|---|---|---|---|")
fail = False
for key in ("rescale_1_to_2", "rescale_2_to_1"):
    x = r.get(key)
    if not x:
        print("| %s | missing |" % key); fail = True; continue
    total = x.get("state_bytes", 0)
    p = x["to_p"]
    bound = total / p * 1.05
    reads = x.get("actual") or []
    ok_bytes = x.get("ok") and all(b <= bound for b in reads)
    ok_time = x.get("processing_ms") is not None and x["processing_ms"] <= 10000
    fail |= not (ok_bytes and ok_time)
    processing = x.get("processing_ms")
    print("| %d -> %d | %.1f s | %.1f s | %s | %s | %s | %s | %s | %s | %s |" % (
        x.get("from_p", 0), p, x["savepoint_ms"] / 1e3, x["deployed_ms"] / 1e3,
        ("%.1f s" % (processing / 1e3)) if processing is not None else "-",
        "met" if ok_time else "MISSED",
        ("%.1f s" % ((processing - x["savepoint_ms"]) / 1e3)) if processing is not None else "-",
        ", ".join("%s (%s)%s" % (gib(b), gib(total / p * 1.05), "" if b <= bound else " OVER")
                  for b in reads),
        ", ".join("%.1f s" % (m / 1e3) for m in (x.get("log_ms") or []) if m is not None),
        x["rss"], x["load"]))
print()
print("FAIL" if fail else "PASS")
sys.exit(1 if fail else 0)
EOF
exit "$ok"
