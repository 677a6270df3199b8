#!/usr/bin/env bash
# The synchronous pause per checkpoint with a file sink (issue 9, Liveness 6): one local cluster
# of 2 workers per build directory, one count-window job with --output and periodic
# checkpoints, then the sync_us of every completed checkpoint (the slowest subtask's synchronous
# part, from `keyflow checkpoints --json`): median and max per build.
#
#   scripts/bench-sink-sync.sh [BUILD_DIR...]     (default: build/)
#
# Pass the build of an older revision first to compare, e.g.
#   git worktree add /tmp/old <older revision> && cmake -S /tmp/old -B /tmp/old/build -G Ninja &&
#   cmake --build /tmp/old/build && scripts/bench-sink-sync.sh /tmp/old/build build
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
for a in "$@"; do
  case "$a" in -*) echo "bench-sink-sync.sh: unknown option '$a' (try --help)" >&2; exit 2 ;; esac
done
[ "$#" -gt 0 ] || set -- "$ROOT/build"
work="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-sink-sync-XXXXXX")"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
input="gen:events=3000000,keys=5000,splits=2,seed=42,rate=600000"
for build in "$@"; do
  [ -x "$build/bin/keyflow" ] || { echo "no keyflow binaries in $build/bin" >&2; exit 1; }
  run_dir="$work/run-$(basename "$(dirname "$build")")-$RANDOM"
  endpoint="$("$ROOT/scripts/start-cluster.sh" --workers 2 --port 0 --run-dir "$run_dir" \
    --build-dir "$build")"
  # shellcheck disable=SC1091
  source "$run_dir/cluster.env"  # the CLI's client key (KEYFLOW_KEYS)
  status=0
  "$build/bin/keyflow" run --coordinator "$endpoint" --job count-window --param time=event --param count=10 \
    --input "$input" --output "$run_dir/output" --parallelism 2 --checkpoint-interval 250ms \
    --wait >"$run_dir/run.out" 2>&1 || status=$?
  "$build/bin/keyflow" checkpoints --json --coordinator "$endpoint" >"$run_dir/checkpoints.json" ||
    status=$?
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" >/dev/null 2>&1 || true
  [ "$status" -eq 0 ] || { cat "$run_dir/run.out" >&2; exit "$status"; }
  python3 - "$build" "$run_dir/checkpoints.json" <<'PY'
import json, statistics, sys
data = json.load(open(sys.argv[2]))
items = data["history"]
us = [c["sync_us"] for c in items if c.get("state") == "COMPLETED" and "sync_us" in c]
if not us:
    sys.exit("no completed checkpoints with sync_us in " + sys.argv[2])
print(f"{sys.argv[1]}: {len(us)} checkpoints, synchronous pause median "
      f"{statistics.median(us) / 1000:.3f} ms, max {max(us) / 1000:.3f} ms")
PY
done
