#!/usr/bin/env bash
# The keyflow demo, from a fresh machine to results in one command:
#   installs the dependencies (scripts/install-deps.sh), builds keyflow (Release, build/),
#   starts a local cluster of 3 workers on a free port, runs the count-or-timeout window job in
#   event time on generated data with --wait, prints a summary of the results and stops the
#   cluster (also on Ctrl-C or failure).
#
#   scripts/demo.sh [--events N] [--keys K] [--count C] [--timeout D]
#
#   --events N    generated events (default 2000000)
#   --keys K      distinct keys, Zipf-skewed so a few are hot (default 50000)
#   --count C     records that close a window (default 100)
#   --timeout D   event time after a window's first record that closes it (default 1min)
#
# The results, logs and pid files stay in the printed run directory. KEYFLOW_BUILD_DIR overrides
# the build directory (default build/ of the repository).
set -euo pipefail

KF_PROG=demo
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

events=2000000 keys=50000 count=100 timeout=1min
need() { [ $# -ge 2 ] || kf_die "$1 needs a value (try --help)"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --events) need "$@"; events="$2"; shift 2 ;;
    --keys) need "$@"; keys="$2"; shift 2 ;;
    --count) need "$@"; count="$2"; shift 2 ;;
    --timeout) need "$@"; timeout="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done

step() { echo; echo "==> $*"; }

step "installing dependencies"
"$ROOT/scripts/install-deps.sh"

build_dir="$(kf_abspath "${KEYFLOW_BUILD_DIR:-$ROOT/build}")"
step "building keyflow (Release, $build_dir)"
cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" --target installables -j "$(nproc)"
KEYFLOW="$build_dir/bin/keyflow"

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-demo-XXXXXX")"
stop() {
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" >/dev/null 2>&1 || true
}
trap stop EXIT
trap 'exit 130' INT TERM  # runs the EXIT trap

step "starting a local cluster: 1 coordinator + 3 workers (run dir $run_dir)"
endpoint="$("$ROOT/scripts/start-cluster.sh" --workers 3 --port 0 --run-dir "$run_dir" \
  --build-dir "$build_dir")"
kf_use_cluster_keys "$run_dir"  # the CLI below uses the cluster's client key (KEYFLOW_KEYS)

# One generator split per subtask: a source subtask reads its splits one after the other, so
# with more splits than subtasks the later splits' records would be behind the watermark.
input="gen:events=$events,keys=$keys,splits=3,seed=42,skew=1"
output="$run_dir/output"
step "running count-window (event time, count=$count, timeout=$timeout) on $input"
echo "$KEYFLOW run --coordinator $endpoint --job count-window --param time=event" \
  "--param count=$count --param timeout=$timeout --input $input --output $output" \
  "--parallelism 3 --wait"
rc=0
"$KEYFLOW" run --coordinator "$endpoint" --job count-window --param time=event \
  --param count="$count" --param timeout="$timeout" --input "$input" --output "$output" \
  --parallelism 3 --wait || rc=$?
if [ "$rc" -ne 0 ]; then
  kf_log "the job did not finish (exit $rc); see the logs in $run_dir"
  kf_log_excerpts "$run_dir/coordinator.log" 10
  exit "$rc"
fi

step "summary of the results in $output"
python3 - "$output" <<'EOF'
import collections, json, os, sys

out = sys.argv[1]
files = sorted(f for f in os.listdir(out) if not f.startswith((".", "_")))
causes, per_key, lines_per_file = collections.Counter(), collections.Counter(), {}
for name in files:
    n = 0
    with open(os.path.join(out, name)) as f:
        for line in f:
            w = json.loads(line)
            causes[w["cause"]] += 1
            per_key[w["key"]] += w["count"]
            n += 1
    lines_per_file[name] = n
print(f"windows: {sum(causes.values())} closing {sum(per_key.values())} records of {len(per_key)} keys")
for cause, n in causes.most_common():
    print(f"  cause {cause:<13} {n:>9} windows")
print("top keys by records:")
for key, n in per_key.most_common(5):
    print(f"  {key:<12} {n:>9} records")
print("output files:")
for name, n in lines_per_file.items():
    print(f"  {os.path.join(out, name)}  ({n} windows)")
EOF

echo
echo "done: results, logs and pid files are in $run_dir (rm -rf it when no longer needed)"
