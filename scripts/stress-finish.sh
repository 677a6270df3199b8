#!/usr/bin/env bash
# Stress loop for issue 9 "a job can hang in FINISHING forever": runs the job that hung about
# 1 in 5 times (a periodic checkpoint racing the end of input) again and again on a local
# 2-worker cluster and checks that every run ends FINISHED within a time bound and that its
# committed output equals a reference run without checkpoints. Not part of ctest (minutes).
#
#   scripts/stress-finish.sh [--runs N] [options]
#
#   --runs N          runs with checkpoints (default 10)
#   --timeout S       bound for one run, submit to FINISHED (default 120)
#   --events N        generated events (default 6000000, the issue's command)
#   --parallelism P   subtasks and workers (default 2)
#   --interval D      --checkpoint-interval of the checked runs (default 500ms)
#   --build-dir DIR   where the binaries are: DIR/bin/keyflow* (default build/ of the repo)
#   --keep            keep the temporary directory (logs, outputs) for inspection
#
# Exit status: 0 all runs passed, 1 a run hung, failed or differed (its directory is kept and
# printed), 2 bad usage.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
runs=10 timeout_s=120 events=6000000 parallelism=2 interval=500ms build_dir="$repo/build" keep=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die_usage() { echo "stress-finish.sh: $1 (see --help)" >&2; exit 2; }
positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die_usage "$1 must be a positive integer, got '$2'"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) [[ $# -ge 2 ]] || die_usage "--runs needs a value"; positive --runs "$2"; runs="$2"; shift 2 ;;
    --timeout) [[ $# -ge 2 ]] || die_usage "--timeout needs a value"; positive --timeout "$2"; timeout_s="$2"; shift 2 ;;
    --events) [[ $# -ge 2 ]] || die_usage "--events needs a value"; positive --events "$2"; events="$2"; shift 2 ;;
    --parallelism) [[ $# -ge 2 ]] || die_usage "--parallelism needs a value"; positive --parallelism "$2"; parallelism="$2"; shift 2 ;;
    --interval) [[ $# -ge 2 ]] || die_usage "--interval needs a value"; interval="$2"; shift 2 ;;
    --build-dir) [[ $# -ge 2 ]] || die_usage "--build-dir needs a value"; build_dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown option '$1'" ;;
  esac
done
keyflow="$build_dir/bin/keyflow"
[[ -x "$keyflow" ]] || die_usage "no keyflow binary at $keyflow: build first or pass --build-dir"

work="$(mktemp -d "${TMPDIR:-/tmp}/stress-finish.XXXXXX")"
run_dir="$work/cluster"
cleanup() {
  "$repo/scripts/stop-cluster.sh" --run-dir "$run_dir" --timeout 5 >/dev/null 2>&1 || true
  if [[ $keep -eq 0 ]]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT

endpoint="$("$repo/scripts/start-cluster.sh" --workers "$parallelism" --port 0 --run-dir "$run_dir" \
  --build-dir "$build_dir" --checkpoint-dir "$work/checkpoints" --allowed-path "$work" \
  2>"$work/start-cluster.log")"
# shellcheck disable=SC1091
source "$run_dir/cluster.env"  # the CLI's client key (KEYFLOW_KEYS)

job_args=(--job tumbling-count --param size=1min --watermark-bound 1s
  --input "gen:events=$events,keys=50000,splits=4,seed=21,disorder=300"
  --parallelism "$parallelism" --max-parallelism 13 --coordinator "$endpoint")

# Committed results, order-independent: every line of every committed part file, sorted.
digest() { find "$1" -maxdepth 1 -type f -name 'part-*' ! -name '*.pending' ! -name '*.inprogress' \
  -exec cat {} + | LC_ALL=C sort | sha256sum | cut -d' ' -f1; }

# One run: submit with --wait under the time bound; prints the elapsed seconds.
run_job() {
  local out="$1"; shift
  local start=$SECONDS rc=0
  timeout "$timeout_s" "$keyflow" run "${job_args[@]}" --output "$out" --wait "$@" \
    >"$out.stdout" 2>"$out.stderr" || rc=$?
  if [[ $rc -eq 124 ]]; then
    echo "run did not end within ${timeout_s}s (hung?): $out.stderr" >&2
    "$keyflow" status --coordinator "$endpoint" >&2 || true
    return 1
  elif [[ $rc -ne 0 ]]; then
    echo "run failed (exit $rc): $(tail -3 "$out.stderr")" >&2
    return 1
  fi
  echo $((SECONDS - start))
}

echo "reference run without checkpoints ($events events, P=$parallelism)..." >&2
ref_s="$(run_job "$work/reference" --checkpoint-interval 0)" || { keep=1; exit 1; }
reference="$(digest "$work/reference")"
lines="$(find "$work/reference" -maxdepth 1 -type f -name 'part-*' -exec cat {} + | wc -l)"
echo "reference: $lines result lines in ${ref_s}s, sha256 $reference" >&2

failed=0
for ((i = 1; i <= runs; i++)); do
  out="$work/run-$i"
  if ! secs="$(run_job "$out" --checkpoint-interval "$interval")"; then
    echo "run $i/$runs: FAILED" >&2
    keep=1
    failed=$((failed + 1))
    break
  fi
  got="$(digest "$out")"
  if [[ "$got" != "$reference" ]]; then
    echo "run $i/$runs: output differs from the reference (sha256 $got): $out" >&2
    keep=1
    failed=$((failed + 1))
    break
  fi
  echo "run $i/$runs: FINISHED in ${secs}s, output equals the reference" >&2
done
if [[ $failed -gt 0 ]]; then exit 1; fi
echo "all $runs runs FINISHED with the reference output" >&2
