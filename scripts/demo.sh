#!/usr/bin/env bash
# The keyflow demo, from a fresh machine to results in one command:
#   installs the dependencies (scripts/install-deps.sh), builds keyflow (Release, build/),
#   starts a local cluster of 3 workers on a free port, runs the count-or-timeout window job in
#   event time on generated data with --wait, prints a summary of the results and stops the
#   cluster (also on Ctrl-C or failure).
#
#   scripts/demo.sh [--kafka] [--events N] [--keys K] [--count C] [--timeout D]
#
#   --kafka       from a Kafka topic to a Kafka topic: starts keyflow-kafka-mock (librdkafka's
#                 mock cluster in its own process, over TCP), produces the events to topic
#                 "events" (3 partitions) with kcat, runs the job with
#                 --input kafka:...,stop=latest and --output kafka:... exactly once (1 s
#                 checkpoints), then reads topic "results" back with kcat
#   --events N    generated events (default 2000000; 200000 with --kafka: the mock keeps about
#                 5 MB per partition)
#   --keys K      distinct keys, Zipf-skewed so a few are hot (default 50000)
#   --count C     records that close a window (default 100; 500 with --kafka)
#   --timeout D   event time after a window's first record that closes it (default 1min; 12h
#                 with --kafka)
#
# The results, logs and pid files stay in the printed run directory. KEYFLOW_BUILD_DIR overrides
# the build directory (default build/ of the repository).
set -euo pipefail

KF_PROG=demo
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

events="" keys=50000 count="" timeout="" kafka=0
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --kafka) kafka=1; shift ;;
    --events) kf_need "$@"; events="$2"; shift 2 ;;
    --keys) kf_need "$@"; keys="$2"; shift 2 ;;
    --count) kf_need "$@"; count="$2"; shift 2 ;;
    --timeout) kf_need "$@"; timeout="$2"; shift 2 ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done

step() { echo; echo "==> $*"; }
# --kafka runs the README's main job (500 records or 12 h of event time per window).
if [ "$kafka" = 1 ]; then
  : "${events:=200000}" "${count:=500}" "${timeout:=12h}"
else
  : "${events:=2000000}" "${count:=100}" "${timeout:=1min}"
fi

step "installing dependencies"
"$ROOT/scripts/install-deps.sh"

build_dir="$(kf_abspath "${KEYFLOW_BUILD_DIR:-$ROOT/build}")"
step "building keyflow (Release, $build_dir)"
cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" --target installables -j "$(nproc)"
KEYFLOW="$build_dir/bin/keyflow"

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-demo-XXXXXX")"
mock_pid=""
stop() {
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" >/dev/null 2>&1 || true
  if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; fi
}
trap stop EXIT
trap 'exit 130' INT TERM  # runs the EXIT trap

step "starting a local cluster: 1 coordinator + 3 workers (run dir $run_dir)"
endpoint="$("$ROOT/scripts/start-cluster.sh" --workers 3 --port 0 --run-dir "$run_dir" \
  --build-dir "$build_dir")"
kf_use_cluster_keys "$run_dir"  # the CLI below uses the cluster's client key (KEYFLOW_KEYS)

run_job() {
  echo "$KEYFLOW run --coordinator $endpoint --job count-window --param time=event" \
    "--param count=$count --param timeout=$timeout --input $1 --output $2 --parallelism 3 --wait" \
    "${*:3}"
  rc=0
  "$KEYFLOW" run --coordinator "$endpoint" --job count-window --param time=event \
    --param count="$count" --param timeout="$timeout" --input "$1" --output "$2" \
    --parallelism 3 --wait "${@:3}" || rc=$?
  if [ "$rc" -ne 0 ]; then
    kf_log "the job did not finish (exit $rc); see the logs in $run_dir"
    kf_log_excerpts "$run_dir/coordinator.log" 10
    exit "$rc"
  fi
}

output="$run_dir/output"
if [ "$kafka" = 1 ]; then
  step "starting keyflow-kafka-mock (topics events:3, results:3, keyflow-sink-commits:1)"
  kf_start_kafka_mock "$build_dir/bin" "$run_dir" events:3 results:3 keyflow-sink-commits:1
  mock_pid="$KF_KAFKA_MOCK_PID"
  bootstrap="$KF_KAFKA_BOOTSTRAP"
  step "producing $events events ($keys keys) to topic events with kcat"
  # Keyed by user: a key always goes to the same partition, and each partition is in event-time
  # order.
  python3 "$ROOT/scripts/lib/kafka_events.py" "$events" "$keys" "$run_dir/events" 20
  kcat -P -b "$bootstrap" -t events -K '\t' -l "$run_dir/events"
  input="kafka:bootstrap=${bootstrap//,/;},topic=events,stop=latest"
  output_topic="kafka:bootstrap=${bootstrap//,/;},topic=results,key=key"
  step "running count-window (event time, count=$count, timeout=$timeout) from topic events" \
    "to topic results"
  run_job "$input" "$output_topic" --checkpoint-interval 1s
  step "reading topic results with kcat"
  mkdir -p "$output"
  kcat -C -b "$bootstrap" -t results -o beginning -e -q -X isolation.level=read_committed \
    >"$output/results.jsonl"
else
  # One generator split per subtask: a source subtask reads its splits one after the other, so
  # with more splits than subtasks the later splits' records would be behind the watermark.
  input="gen:events=$events,keys=$keys,splits=3,seed=42,skew=1"
  step "running count-window (event time, count=$count, timeout=$timeout) on $input"
  run_job "$input" "$output"
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
