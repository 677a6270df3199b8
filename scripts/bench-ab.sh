#!/usr/bin/env bash
# Before/after throughput of two builds side by side: count-window in event time on a local
# cluster per build (2 workers each, both up the whole time), run alternately — A, B, A, B, ... —
# so that both see the same machine. Sequential benchmark runs on a shared VM can differ by more
# than a change does; alternating them is how a change's cost on an existing path is measured.
#
#   scripts/bench-ab.sh --before TREE --after TREE [--runs N] [--events E] [--keys K]
#
#   --before TREE  a checkout whose build/ has keyflow, keyflow-coordinator, keyflow-worker
#                  (e.g. `git worktree add ../before <commit>` and build it there)
#   --after TREE   the same for the other build (e.g. this checkout)
#   --runs N       runs per build (default 5)
#   --events E     generated events per run (default 20000000)
#   --keys K       distinct keys (default 1000000)
#
# Prints one line per run ("before 1 3872 ms 5.17 M/s load 0.25") and the median of each build.
# Both clusters are stopped on exit.
set -Eeuo pipefail
KF_PROG=bench-ab
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

before="" after="" runs=5 events=20000000 keys=1000000
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --before) kf_need "$@"; before="$2"; shift 2 ;;
    --after) kf_need "$@"; after="$2"; shift 2 ;;
    --runs) kf_need "$@"; runs="$2"; shift 2 ;;
    --events) kf_need "$@"; events="$2"; shift 2 ;;
    --keys) kf_need "$@"; keys="$2"; shift 2 ;;
    -h | --help) kf_usage; exit 0 ;;
    --version) echo "bench-ab (keyflow scripts)"; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done
if [ -z "$before" ] || [ -z "$after" ]; then
  kf_die "give --before TREE and --after TREE (try --help)"
fi
for v in runs events keys; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || kf_die "--$v must be a positive integer, got '${!v}'"
done
declare -A tree endpoint
tree[before]="$(kf_abspath "$before")"
tree[after]="$(kf_abspath "$after")"
for side in before after; do
  for bin in keyflow keyflow-coordinator keyflow-worker; do
    [ -x "${tree[$side]}/build/bin/$bin" ] ||
      kf_die "--$side ${tree[$side]}: no build/bin/$bin (build it first)"
  done
done
work="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-bench-ab-XXXXXX")"
cleanup() {
  for side in before after; do
    "${tree[$side]}/scripts/stop-cluster.sh" --run-dir "$work/$side" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for side in before after; do
  endpoint[$side]="$("${tree[$side]}/scripts/start-cluster.sh" --workers 2 --port 0 \
    --run-dir "$work/$side" --build-dir "${tree[$side]}/build" 2>"$work/$side-start.log")" ||
    { cat "$work/$side-start.log" >&2; kf_die "the $side cluster did not start"; }
done
declare -A times
for ((i = 1; i <= runs; i++)); do
  for side in before after; do
    kf_use_cluster_keys "$work/$side"
    keyflow="${tree[$side]}/build/bin/keyflow"
    "$keyflow" run --coordinator "${endpoint[$side]}" --job count-window --param time=event \
      --input "gen:events=$events,keys=$keys,splits=2,seed=42" --output "$work/$side/out" \
      --parallelism 2 --wait >"$work/$side-run-$i.log" 2>&1 ||
      { cat "$work/$side-run-$i.log" >&2; kf_die "$side run $i failed"; }
    read -r ms records < <("$keyflow" status --json --coordinator "${endpoint[$side]}" |
      python3 -c 'import json,sys; j=json.load(sys.stdin)["job"]; print(j["duration_ms"], j["records_in"])')
    [ "$records" = "$events" ] || kf_die "$side run $i read $records records instead of $events"
    rm -rf "$work/$side/out"
    times[$side]+="$ms "
    echo "$side $i $ms ms $(python3 -c "print(round($events/$ms/1000, 2))") M/s load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
for side in before after; do
  # shellcheck disable=SC2086
  median="$(python3 -c 'import statistics,sys; print(statistics.median(int(a) for a in sys.argv[1:]))' ${times[$side]})"
  echo "$side: median $median ms = $(python3 -c "print(round($events/$median/1000, 2))") M records/s"
done
