#!/usr/bin/env bash
# Kafka end to end (issue 30), on keyflow-kafka-mock (librdkafka's mock cluster in its own
# process, over TCP) and a local cluster of 2 workers:
#   1. throughput: count-window in event time at P = 2 from topic "events" (stop=latest) to
#      topic "results", exactly once with 1 s checkpoints — beside, in the same run, the same
#      job reading the same number of records from the generator (gen:) into the same Kafka
#      sink, and a plain librdkafka consume loop of the same topic (kcat -C, output discarded);
#      R runs each, alternating; the medians count (target: the Kafka job >= 0.5x the
#      generator job),
#   2. latency: the same job, unbounded, on topic "live" fed at half the Kafka job's rate with
#      event time = the wall clock at production, for S seconds: the processing latency p50/p99
#      (latency markers, `keyflow status`) and the visibility latency of the exactly-once output
#      (a read_committed consumer of the output topic: arrival time - the window's event time;
#      bounded by the checkpoint interval). Both consumers of this run use fetch.wait.max.ms=10:
#      the mock may hold a fetch for the whole fetch.wait.max.ms (default 500 ms) where a Kafka
#      broker answers as soon as a record is there, which would add up to 0.5 s per consumer.
#
#   scripts/bench-kafka.sh [--events N] [--keys K] [--partitions P] [--repeat R]
#                          [--latency-seconds S] [--latency-rate N] [--results-dir DIR]
#
#   --events N           records in topic "events" (default 3000000; the mock keeps about 5 MB
#                        per partition, so N * ~50 bytes / P must stay below that)
#   --keys K             distinct keys, Zipf-skewed (default 20000)
#   --partitions P       partitions of "events" and "live" (default 48)
#   --repeat R           runs per configuration (default 3)
#   --latency-seconds S  length of the latency run (default 20; 0 skips it)
#   --latency-rate N     records/s of the latency run (default: half the Kafka job's measured
#                        rate). The feeder (python + kcat) and the mock share the machine's
#                        cores with the job: on 2 cores, half the rate leaves the job short of
#                        CPU, and consumer lag then dominates the visibility latency
#   --results-dir DIR    logs and results.md (default: a new temp dir)
set -euo pipefail

KF_PROG=bench-kafka
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

events=3000000 keys=20000 partitions=48 repeat=3 latency_seconds=20 latency_rate=""
results_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --events) kf_need "$@"; events="$2"; shift 2 ;;
    --keys) kf_need "$@"; keys="$2"; shift 2 ;;
    --partitions) kf_need "$@"; partitions="$2"; shift 2 ;;
    --repeat) kf_need "$@"; repeat="$2"; shift 2 ;;
    --latency-seconds) kf_need "$@"; latency_seconds="$2"; shift 2 ;;
    --latency-rate) kf_need "$@"; latency_rate="$2"; shift 2 ;;
    --results-dir) kf_need "$@"; results_dir="$2"; shift 2 ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done
for v in events keys partitions repeat; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || kf_die "--${v//_/-} must be a positive integer, got '${!v}'"
done
[[ "$latency_seconds" =~ ^[0-9]+$ ]] || kf_die "--latency-seconds must be a number of seconds"

build_dir="$(kf_abspath "${KEYFLOW_BUILD_DIR:-$ROOT/build}")"
BIN="$build_dir/bin"
[ -n "$results_dir" ] || results_dir="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-bench-kafka-XXXXXX")"
results_dir="$(kf_abspath "$results_dir")"
mkdir -p "$results_dir"
run_dir="$results_dir/cluster" mock_pid="" feeder_pid="" reader_pid=""
cleanup() {
  for p in "$feeder_pid" "$reader_pid" "$mock_pid"; do
    if [ -n "$p" ]; then kill "$p" 2>/dev/null || true; fi
  done
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
step() { printf "\n==> %s\n" "$*" >&2; }
calc() { python3 -c "print($1)"; }
median() { python3 -c 'import statistics,sys; print(statistics.median(float(a) for a in sys.argv[1:]))' "$@"; }
now() { date +%s.%N; }

step "building (Release, $build_dir)"
cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$results_dir/cmake.log" 2>&1 ||
  { kf_log_excerpt "$results_dir/cmake.log"; kf_die "cmake configure failed"; }
cmake --build "$build_dir" --target keyflow keyflow-coordinator keyflow-worker keyflow-kafka-mock \
  -j "$(nproc)"

step "starting keyflow-kafka-mock and a local cluster of 2 workers (run dir $run_dir)"
kf_start_kafka_mock "$BIN" "$results_dir" "events:$partitions" "live:$partitions" results:2 \
  live-results:2 keyflow-sink-commits:1
mock_pid="$KF_KAFKA_MOCK_PID"
bootstrap="$KF_KAFKA_BOOTSTRAP"
kafka="kafka:bootstrap=${bootstrap//,/;}"
endpoint="$("$ROOT/scripts/start-cluster.sh" --workers 2 --port 0 --run-dir "$run_dir" \
  --build-dir "$build_dir")"
kf_use_cluster_keys "$run_dir"
KEYFLOW="$BIN/keyflow"

step "producing $events records ($keys keys) to topic events"
python3 "$ROOT/scripts/lib/kafka_events.py" "$events" "$keys" "$results_dir/events" 3
# Spread at random over the partitions (keyed, the hot keys' partitions would outgrow what the
# mock keeps); every partition is still in event-time order.
kcat -P -b "$bootstrap" -t events -K '\t' -X topic.partitioner=random -l "$results_dir/events"

# run_job INPUT OUTPUT_TOPIC: count-window at P = 2, exactly once, 1 s checkpoints, --wait; sets
# rate (records in / job duration).
run_no=0
run_job() {
  run_no=$((run_no + 1))
  local args=(run --coordinator "$endpoint" --job count-window --param time=event --input "$1"
    --output "$kafka,topic=$2" --parallelism 2 --checkpoint-interval 1s --wait)
  step "run $run_no: keyflow ${args[*]}"
  timeout 1800 "$KEYFLOW" "${args[@]}" >"$results_dir/run-$run_no.out" 2>&1 ||
    { cat "$results_dir/run-$run_no.out" >&2; kf_die "run $run_no failed (logs in $run_dir)"; }
  "$KEYFLOW" status --json --coordinator "$endpoint" >"$results_dir/status-$run_no.json"
  rate="$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["job"]; assert j["state"]=="FINISHED", j["state"]; print(j["records_in"]*1000/j["duration_ms"])' "$results_dir/status-$run_no.json")"
  echo "run $run_no: $(calc "round($rate)") records/s" >&2
}

kafka_rates=() gen_rates=() plain_rates=()
for ((r = 0; r < repeat; r++)); do
  step "plain consume loop: kcat -C of topic events, output discarded"
  t0="$(now)"
  n="$(kcat -C -b "$bootstrap" -t events -o beginning -e -q -f '\n' | wc -l)"
  t1="$(now)"
  [ "$n" = "$events" ] || kf_die "kcat read $n records instead of $events"
  plain_rates+=("$(calc "$n / ($t1 - $t0)")")
  run_job "$kafka,topic=events,stop=latest" results
  kafka_rates+=("$rate")
  run_job "gen:events=$events,keys=$keys,splits=2,seed=42" results
  gen_rates+=("$rate")
done
kafka_rate="$(median "${kafka_rates[@]}")"
gen_rate="$(median "${gen_rates[@]}")"
plain_rate="$(median "${plain_rates[@]}")"

latency_rows=""
if [ "$latency_seconds" -gt 0 ]; then
  half="${latency_rate:-$(calc "int($kafka_rate / 2)")}"
  step "latency: topic live fed at $half records/s for $latency_seconds s"
  "$KEYFLOW" run --coordinator "$endpoint" --job count-window --param time=event \
    --param count=100 --input "$kafka,topic=live,kafka.fetch.wait.max.ms=10" --output "$kafka,topic=live-results" \
    --parallelism 2 --checkpoint-interval 1s >"$results_dir/live-run.out" 2>&1
  # The visibility latency: arrival at a read_committed consumer - the window's event time.
  kcat -C -b "$bootstrap" -t live-results -o end -u -q -f '%T\n' \
    -X isolation.level=read_committed -X fetch.wait.max.ms=10 2>/dev/null |
    python3 -c '
import sys, time
with open(sys.argv[1], "w") as out:
    for line in sys.stdin:
        out.write(f"{time.time() * 1000 - int(line):.1f}\n")
' "$results_dir/visibility-ms.txt" &
  reader_pid=$!
  python3 - "$half" "$latency_seconds" "$keys" <<'EOF' | kcat -P -b "$bootstrap" -t live -K '\t' -X linger.ms=5 \
    -X topic.partitioner=random &
import random, sys, time
rate, seconds, keys = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
# Prebuilt line halves: a line costs one join of its key's prefix with the current time.
prefix = [f'k{k}\t{{"uid":"k{k}","ts":' for k in range(keys)]
order = [prefix[rng.randrange(keys)] for _ in range(1 << 16)]
start = time.time()
sent = 0
out = sys.stdout
while time.time() - start < seconds:
    due = int((time.time() - start) * rate)
    n = due - sent
    if n > 0:
        now = str(int(time.time() * 1000)) + "}\n"
        i = sent & 0xFFFF
        chunk = (order[i:] + order)[:n] if n <= 1 << 16 else [order[j & 0xFFFF] for j in range(i, i + n)]
        out.write(now.join(chunk) + now)
        out.flush()
        sent = due
    time.sleep(0.005)
EOF
  feeder_pid=$!
  sleep "$((latency_seconds - 2))"
  "$KEYFLOW" status --json --coordinator "$endpoint" >"$results_dir/live-status.json"
  wait "$feeder_pid" || true
  feeder_pid=""
  sleep 3  # the last checkpoint commits
  kill "$reader_pid" 2>/dev/null || true
  reader_pid=""
  "$KEYFLOW" cancel --coordinator "$endpoint" >/dev/null 2>&1 || true
  latency_rows="$(python3 - "$results_dir/live-status.json" "$results_dir/visibility-ms.txt" "$half" <<'EOF'
import json, statistics, sys
job = json.load(open(sys.argv[1]))["job"]
p50 = max(s["latency"]["p50_ms"] for s in job["subtasks"])
p99 = max(s["latency"]["p99_ms"] for s in job["subtasks"])
rate = job.get("records_in_per_s", 0)
vis = sorted(float(x) for x in open(sys.argv[2]) if x.strip())
def q(v, p): return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
print(f"| processing latency, fed at {sys.argv[3]} records/s (read: {rate / 1e3:.0f} k/s; latency markers, slowest subtask) | p50 {p50:.1f} ms, p99 {p99:.1f} ms | |")
print(f"| visibility latency of the exactly-once output, {len(vis)} windows (1 s checkpoints) | p50 {q(vis, .5):.0f} ms, p99 {q(vis, .99):.0f} ms | <= checkpoint interval + commit |")
EOF
)"
fi

{
  echo "Kafka end to end on keyflow-kafka-mock, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg);"
  echo "$events records, $keys keys, $partitions partitions, median of $repeat runs"
  echo
  echo "| measurement | value | target |"
  echo "| --- | --- | --- |"
  echo "| count-window, Kafka -> Kafka exactly once, P = 2, 1 s checkpoints | $(calc "round($kafka_rate/1e3)") k records/s ($(calc "round($kafka_rate/$gen_rate,2)")x the generator job, $(calc "round($kafka_rate/$plain_rate,2)")x the plain loop) | >= 0.5x the generator job |"
  echo "| the same job from the generator (gen:) into the same Kafka sink | $(calc "round($gen_rate/1e3)") k records/s | |"
  echo "| plain librdkafka consume loop of topic events (kcat -C) | $(calc "round($plain_rate/1e3)") k records/s | |"
  [ -z "$latency_rows" ] || echo "$latency_rows"
} | tee "$results_dir/results.md"
echo "results: $results_dir/results.md" >&2
