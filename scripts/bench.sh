#!/usr/bin/env bash
# The keyflow benchmarks and their targets (issues 2, 3, 4), in one run:
#   1. builds keyflow in Release (build/ of the repository),
#   2. micro-benchmarks, single thread (Google Benchmark, tests/bench/): key -> key group,
#      ValueState read+update, timers (register, fire, bytes per timer), snapshot write/restore,
#      checkpoint synchronous part / asynchronous write / cost on the task thread, the
#      coordinator's REST status snapshot of a 128-subtask job (tests/bench/status_bench.cc),
#      the Kafka source reader beside a plain librdkafka consume loop (kafka_source_bench.cc),
#   3. end to end on a local cluster (scripts/start-cluster.sh --workers 2 --port 0 in a temp run
#      dir): count-window in event time on gen: input at P = 2 — records/s end to end against a
#      single-thread in-memory keyed count of the same records (tests/bench/baseline_bench.cc),
#      then the same job with --checkpoint-interval 1s against without, with the checkpoints'
#      synchronous pause and duration from `keyflow checkpoints --json`; in the same runs, the
#      running-sum example job (worker/jobs/examples/, a job library loaded with --job-library)
#      that reads one numeric field ("amount") of generated records carrying ~100 bytes of other
#      fields (the generator's "note"), against count-window, which reads no fields (issue 10:
#      target >= 0.5x); running-sum declares the one field it reads (JobDefinition::fields), so
#      the source drops the others before the shuffle,
#   4. prints a markdown table of every number with its target and the machine's load average.
# Kafka end to end (Kafka -> job -> Kafka on keyflow-kafka-mock) is scripts/bench-kafka.sh.
#
#   scripts/bench.sh [--quick] [--micro-only | --e2e-only | --throughput-only | --metrics-only]
#                    [options]
#
#   --quick            small sizes for a smoke run (numbers not comparable to the targets)
#   --micro-only       only the micro-benchmarks
#   --e2e-only         only the end-to-end benchmarks
#   --throughput-only  only the end-to-end throughput runs (count-window, running-sum, baseline),
#                      not the checkpoint runs
#   --events N         events per end-to-end job (default 20000000; --quick 400000)
#   --keys K           distinct keys of the throughput job (default 1000000; --quick 20000)
#   --ckpt-keys K      distinct keys of the checkpoint jobs (default 2000000, i.e. 1 M keys and
#                      1 M timers per worker at P = 2; --quick 40000)
#   --repeat R         end-to-end runs per configuration, alternating; the median counts
#                      (default 3; --quick 1)
#   --results-dir DIR  where logs, JSON and results.md go (default: a new temp dir)
#   --security         also CURVE vs --insecure end to end (issue 13; target >= 0.85x): a second
#                      local cluster started with --insecure, count-window run R times on each,
#                      alternating with the (secure) first cluster; the median counts
#   --metrics          also the cost of Prometheus scraping (issue 12; target <= 2 % loss):
#                      count-window with the coordinator's /metrics fetched every second by a
#                      curl loop (B) and not scraped (A) on the same cluster, --warmup runs
#                      first, then R pairs AB BA ...; the median of the per-pair ratios counts,
#                      and the CPU per record of the coordinator + workers, scraped vs not
#   --metrics-only     only that comparison (no micro-benchmarks, throughput or checkpoint runs)
#   --rocksdb          also the RocksDB state backend (issue 11): the micro-benchmark
#                      rocksdb_state_bench (ValueState read+update, RocksDB vs the heap in the
#                      same run) and count-window end to end with --state-backend rocksdb vs
#                      heap, R runs each, alternating (target >= 0.4x); the median counts
#                      with --rocksdb also: the checkpoint runs below once more with
#                      --state-backend rocksdb (1 s interval vs none, target <= 10 % loss);
#                      state larger than memory (count-window on a fresh 2-worker cluster with
#                      --big-keys keys, each once, state >= 4x block cache + memtables: the
#                      workers' peak RSS (VmHWM) and the state bytes on disk, sampled every
#                      second); rescale 1 -> 2 -> 1 with --rescale-keys keys on RocksDB
#                      (scripts/bench-rescale.sh --state-backend rocksdb: command -> processing
#                      again, target <= 10 s)
#   --rocksdb-only     only those RocksDB comparisons (not the heap's micro-benchmarks,
#                      throughput or checkpoint runs); with --micro-only only
#                      rocksdb_state_bench, with --e2e-only all but it
#   --big-keys K       keys of the larger-than-memory run (default 30000000: 15 M windows per
#                      worker at P = 2, against 128 MiB of block cache + memtables per
#                      subtask; --quick 400000)
#   --rescale-keys K   keys of the RocksDB rescale (default 10000000; --quick 100000)
#   --incremental      also incremental checkpoints (issue 11): count-window with a 1 s
#                      interval on --incr-keys keys where, after a first pass over every key, all
#                      records go to 1 % of them (gen:...,hot=0.01), heap and rocksdb, each
#                      incremental (the default) and with --incremental false in the same run,
#                      and the uniform workload (incremental): per checkpoint the bytes written
#                      (written_bytes) against the full state size, and trigger -> complete
#                      (targets: <= 5 % of the full size, <= 300 ms); the steady state is the
#                      second half of the checkpoints taken while the job held state
#   --incremental-only only that comparison
#   --incr-keys K      keys of the incremental runs (default 10000000; --quick 200000 at
#                      100 k events/s so that checkpoints happen); 3 K events per run
#   --latency          latency as a user feels it (issue 12; worker/README.md "Latency") instead
#                      of the default end-to-end runs: count-window's maximum throughput on gen:
#                      input (R pairs of runs with latency markers and with --latency-interval
#                      0 after --warmup runs, as --metrics: what the markers cost), then a
#                      rate-limited generator at 50 % of it for --latency-seconds, without and with
#                      --checkpoint-interval 1s, reporting p50/p99 from `keyflow status` (the
#                      slowest subtask's, median over one sample a second after a warm-up)
#   --latency-seconds S  length of each rate-limited run (default 30; --quick 12)
#   --chaining         also what operator chaining costs (job graphs; target >= 0.95x): the same
#                      Map -> Filter -> sum per key as a graph whose Map and Filter run chained
#                      in the source's task before the KeyBy (chain-graph) and inside one keyed
#                      function (chain-inline), tests/bench/jobs/chain_jobs.cc, R runs each,
#                      alternating; the median counts
#   --chaining-only    only that comparison
#   --nexmark          also the Nexmark queries that run today (q0 pass-through, q1 map, q2
#                      filter; worker/jobs/nexmark/) on the deterministic Nexmark source
#                      (connector:nexmark:events=N,splits=2), P = 2, 1 s checkpoints, R runs each;
#                      events/s in all and per core (this machine's CPUs), the median counts
#   --nexmark-only     only those
#   --nexmark-events N events per Nexmark run (default 10000000; --quick 400000)
#   --warmup N         runs discarded before the --metrics and --latency comparisons (default 1):
#                      then R pairs in AB BA ... order; each pair's ratio counts (their median),
#                      and so does the CPU time per record of the coordinator and the workers
#                      (/proc/<pid>/stat around each run; robust to the machine's load;
#                      scripts/bench-lib/abba.sh)
#
# KEYFLOW_BUILD_DIR overrides the build directory, KEYFLOW_JOBS the build's -j (default nproc).
# Every process it starts is stopped on exit (also on Ctrl-C or failure). The numbers depend on
# the machine and on what else runs on it: the table shows the 1-minute load average measured
# right before each number.
set -Eeuo pipefail  # -E: the ERR trap below also covers functions

KF_PROG=bench
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"
RESULTS_PY="$ROOT/scripts/bench-lib/bench_results.py"
# shellcheck source=bench-lib/abba.sh
source "$ROOT/scripts/bench-lib/abba.sh"  # abba_compare (--metrics, --latency)

quick=0 micro=1 e2e=1 ckpt_runs=1 events="" keys="" ckpt_keys="" repeat="" results_dir=""
security=0 metrics=0 throughput=1 rocksdb=0 latency=0 latency_seconds="" chaining=0
nexmark=0 nexmark_events=""
warmup=1 rocksdb_micro=0 e2e_only=0
incremental=0 incr_keys="" big_keys="" rescale_keys="" ckpt_backends="heap"
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --quick) quick=1; shift ;;
    --micro-only) e2e=0; shift ;;
    --e2e-only) micro=0 e2e_only=1; shift ;;
    --throughput-only) micro=0 ckpt_runs=0; shift ;;
    --events) kf_need "$@"; events="$2"; shift 2 ;;
    --keys) kf_need "$@"; keys="$2"; shift 2 ;;
    --ckpt-keys) kf_need "$@"; ckpt_keys="$2"; shift 2 ;;
    --repeat) kf_need "$@"; repeat="$2"; shift 2 ;;
    --results-dir) kf_need "$@"; results_dir="$2"; shift 2 ;;
    --security) security=1; shift ;;
    --metrics) metrics=1; shift ;;
    --metrics-only) metrics=1 micro=0 ckpt_runs=0 throughput=0; shift ;;
    --rocksdb) rocksdb=1 ckpt_backends="heap rocksdb"; shift ;;
    --rocksdb-only) rocksdb=1 micro=0 rocksdb_micro=1 throughput=0 ckpt_backends="rocksdb"; shift ;;
    --big-keys) kf_need "$@"; big_keys="$2"; shift 2 ;;
    --rescale-keys) kf_need "$@"; rescale_keys="$2"; shift 2 ;;
    --incremental) incremental=1; shift ;;
    --incremental-only) incremental=1 micro=0 ckpt_runs=0 throughput=0; shift ;;
    --incr-keys) kf_need "$@"; incr_keys="$2"; shift 2 ;;
    --latency) latency=1 micro=0 ckpt_runs=0 throughput=0; shift ;;
    --chaining) chaining=1; shift ;;
    --chaining-only) chaining=1 micro=0 ckpt_runs=0 throughput=0; shift ;;
    --nexmark) nexmark=1; shift ;;
    --nexmark-only) nexmark=1 micro=0 ckpt_runs=0 throughput=0; shift ;;
    --nexmark-events) kf_need "$@"; nexmark_events="$2"; shift 2 ;;
    --latency-seconds) kf_need "$@"; latency_seconds="$2"; shift 2 ;;
    --warmup) kf_need "$@"; warmup="$2"; shift 2 ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done
# rocksdb_state_bench runs with the other micro-benchmarks (--rocksdb) or alone (--rocksdb-only,
# unless --e2e-only; --rocksdb-only --micro-only: only it).
[ "$rocksdb" -eq 0 ] || [ "$micro" -eq 0 ] || rocksdb_micro=1
[ "$e2e_only" -eq 0 ] || rocksdb_micro=0
[ "$micro" -eq 1 ] || [ "$e2e" -eq 1 ] || [ "$rocksdb_micro" -eq 1 ] ||
  kf_die "--micro-only and --e2e-only exclude each other"
if [ "$quick" -eq 1 ]; then
  : "${events:=400000}" "${keys:=20000}" "${ckpt_keys:=40000}" "${repeat:=1}"
  : "${latency_seconds:=12}" "${incr_keys:=200000}" "${big_keys:=400000}" "${rescale_keys:=100000}"
  incr_rate=100000
  : "${nexmark_events:=400000}"
else
  : "${nexmark_events:=10000000}"
  : "${events:=20000000}" "${keys:=1000000}" "${ckpt_keys:=2000000}" "${repeat:=3}"
  : "${latency_seconds:=30}" "${incr_keys:=10000000}" "${big_keys:=30000000}"
  : "${rescale_keys:=10000000}"
  incr_rate=""
fi
[ "$latency" -eq 0 ] || [ "$latency_seconds" -ge 8 ] 2>/dev/null ||
  kf_die "--latency-seconds must be an integer of at least 8 (a 5 s warm-up, then samples), got '$latency_seconds'"
[[ "$warmup" =~ ^[0-9]+$ ]] || kf_die "--warmup must be a number of runs >= 0, got '$warmup'"
for v in events keys ckpt_keys repeat incr_keys big_keys rescale_keys nexmark_events; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || kf_die "--${v//_/-} must be a positive integer, got '${!v}'"
done

build_dir="$(kf_abspath "${KEYFLOW_BUILD_DIR:-$ROOT/build}")"
BIN="$build_dir/bin"
[ -n "$results_dir" ] || results_dir="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-bench-XXXXXX")"
results_dir="$(kf_abspath "$results_dir")"
mkdir -p "$results_dir"
ROWS="$results_dir/rows.tsv"
: >"$ROWS"
run_dir=""

insecure_run_dir="" scraper_pid="" big_run_dir="" big_stopped=0
cleanup() {
  if [ -n "$scraper_pid" ]; then kill "$scraper_pid" 2>/dev/null || true; fi
  if [ -n "$run_dir" ]; then
    "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" >/dev/null 2>&1 || true
  fi
  if [ -n "$insecure_run_dir" ]; then
    "$ROOT/scripts/stop-cluster.sh" --run-dir "$insecure_run_dir" >/dev/null 2>&1 || true
  fi
  if [ -n "$big_run_dir" ] && [ "$big_stopped" -eq 0 ]; then
    "$ROOT/scripts/stop-cluster.sh" --run-dir "$big_run_dir" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # runs the EXIT trap
# Any other failing command (set -e): say where, and where the logs are.
trap 'rc_=$?; [ "$BASH_SUBSHELL" -gt 0 ] || kf_log "failed at scripts/bench.sh line $LINENO (exit $rc_); logs and results so far in $results_dir"' ERR

step() { printf "\n==> %s\n" "$*" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
value() { python3 "$RESULTS_PY" "$@"; }
# row SECTION METRIC VALUE UNIT TARGET LOAD [NOTE]: one line of the results table.
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}" >>"$ROWS"; }
calc() { python3 -c "print($1)"; }  # float arithmetic
median() { python3 -c 'import statistics,sys; print(statistics.median(float(a) for a in sys.argv[1:]))' "$@"; }

# ---- build -------------------------------------------------------------------------------------
micro_targets=(key_group_bench state_bench timer_bench snapshot_bench checkpoint_bench status_bench
  kafka_source_bench)
e2e_targets=(keyflow keyflow-coordinator keyflow-worker baseline_bench running-sum)
targets=()
[ "$micro" -eq 0 ] || targets+=("${micro_targets[@]}")
[ "$rocksdb_micro" -eq 0 ] || targets+=(rocksdb_state_bench)
[ "$e2e" -eq 0 ] || targets+=("${e2e_targets[@]}")
[ "$chaining" -eq 0 ] || targets+=(chain-jobs)
[ "$nexmark" -eq 0 ] || targets+=(nexmark)
step "building (Release, $build_dir): ${targets[*]}"
cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DKEYFLOW_BUILD_BENCHMARKS=ON >"$results_dir/cmake.log" 2>&1 ||
  { kf_log_excerpt "$results_dir/cmake.log"; kf_die "cmake configure failed"; }
cmake --build "$build_dir" --target "${targets[@]}" -j "${KEYFLOW_JOBS:-$(nproc)}"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')," \
  "THP $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$results_dir/machine.txt" >&2

# ---- micro-benchmarks --------------------------------------------------------------------------
# run_bench NAME [FILTER]: runs build/bin/NAME into $results_dir/NAME.json; sets `load` to the
# load average just before.
run_bench() {
  local name="$1" filter="${2:-}" args=()
  [ -z "$filter" ] || args+=("--benchmark_filter=$filter")
  [ "$quick" -eq 0 ] || args+=("--benchmark_min_time=0.01")
  load="$(load1)"
  step "$name ${args[*]} (load $load)"
  "$BIN/$name" "${args[@]}" --benchmark_out="$results_dir/$name.json" \
    --benchmark_out_format=json >&2
}

if [ "$micro" -eq 1 ]; then
  run_bench key_group_bench
  for b in AssignStringKey:"string Key (12 B)" AssignStringView:"string_view (12 B)" \
    AssignIntKey:"int key" AssignLongKey:"long key"; do
    v="$(value bench "$results_dir/key_group_bench.json" "BM_${b%%:*}" items_per_second)"
    target=""
    [[ "$b" == AssignString* ]] && target=">= 50"
    row "key groups" "key -> key group, ${b#*:}" "$(calc "$v/1e6")" "M keys/s" "$target" "$load"
  done

  run_bench state_bench 'BM_ValueStateReadUpdate(Prefetched)?/1000000'
  v="$(value bench "$results_dir/state_bench.json" BM_ValueStateReadUpdate/1000000 items_per_second)"
  row "keyed state" "ValueState<int64> read+update, 1 M keys, one at a time" "$(calc "$v/1e6")" \
    "M ops/s" ">= 15" "$load"
  v="$(value bench "$results_dir/state_bench.json" BM_ValueStateReadUpdatePrefetched/1000000 \
    items_per_second)"
  row "keyed state" "ValueState<int64> read+update, 1 M keys, as the keyed task runs a batch" \
    "$(calc "$v/1e6")" "M ops/s" ">= 15" "$load" "state of the record 8 ahead prefetched"

  run_bench timer_bench 'BM_RegisterEventTimers|BM_RegisterDuplicateEventTimers|BM_FireEventTimers|BM_MemoryPerTimer'
  f="$results_dir/timer_bench.json"
  v="$(value bench "$f" BM_RegisterEventTimers items_per_second)"
  row "timers" "register 1 M event timers (new)" "$(calc "$v/1e6")" "M/s" ">= 10" "$load"
  v="$(value bench "$f" BM_RegisterDuplicateEventTimers items_per_second)"
  row "timers" "register 1 M event timers (all duplicates)" "$(calc "$v/1e6")" "M/s" ">= 10" "$load"
  v="$(value bench "$f" BM_FireEventTimers items_per_second)"
  row "timers" "fire 1 M event timers" "$(calc "$v/1e6")" "M/s" ">= 10" "$load"
  v="$(value bench "$f" BM_MemoryPerTimer bytes_per_timer)"
  row "timers" "resident bytes per timer at 10 M timers (int64 keys)" "$v" "B" "<= 48" "$load"

  run_bench snapshot_bench
  f="$results_dir/snapshot_bench.json"
  mb="$(value bench "$f" BM_WriteKeyedSnapshot snapshot_MB)"
  note="1 M keys ValueState<int64> + 1 M event timers, 12-byte keys, M = 128: $(calc "round($mb)") MB"
  v="$(value bench "$f" BM_WriteKeyedSnapshot bytes_per_second)"
  row "snapshots" "write (WriteKeyedSnapshot, in memory)" "$(calc "$v/1e6")" "MB/s" ">= 300" "$load" "$note"
  v="$(value bench "$f" BM_AsyncKeyedSnapshotWriteTo bytes_per_second)"
  row "snapshots" "write (AsyncKeyedSnapshot::WriteTo, in memory)" "$(calc "$v/1e6")" "MB/s" ">= 300" "$load"
  v="$(value bench "$f" BM_RestoreKeyedSnapshot bytes_per_second)"
  row "snapshots" "restore (KeyedSnapshotReader::Restore into a fresh backend)" "$(calc "$v/1e6")" "MB/s" ">= 300" "$load"
  w="$(value bench "$f" BM_WriteKeyedSnapshot cpu_time)"
  v="$(value bench "$f" BM_CopyAllKeyGroups cpu_time)"
  row "snapshots" "copy-on-write copies of all 128 key groups (task thread's cost)" "$v" "ms" "" \
    "$load" "serialising them all instead takes $(calc "round($w)") ms"

  run_bench checkpoint_bench
  f="$results_dir/checkpoint_bench.json"
  note="count-window (event time) operator, 1 M keys + 1 M timers"
  v="$(value bench "$f" BM_CheckpointSyncPart real_time)"
  row "checkpoint (micro)" "synchronous part (new AsyncKeyedSnapshot + install guard)" "$(calc "$v/1e3")" "ms" "<= 10" "$load" "$note"
  v="$(value bench "$f" BM_CheckpointAsyncWrite real_time)"
  mb="$(value bench "$f" BM_CheckpointAsyncWrite file_MB)"
  row "checkpoint (micro)" "async write to file + fdatasync, task idle" "$v" "ms" "<= 500" "$load" "$(calc "round($mb)") MB file"
  n=BM_CheckpointWhileProcessing
  v="$(value bench "$f" "$n" async_ms)"
  row "checkpoint (micro)" "async write while the task processes records" "$v" "ms" "<= 500" "$load"
  base="$(value bench "$f" BM_ProcessRecords items_per_second)"
  rate="$(value bench "$f" "$n" task_rate)"
  kg="$(value bench "$f" "$n" kg_by_task)"
  stall="$(value bench "$f" "$n" max_stall_ms)"
  v="$(value bench "$f" "$n" extra_task_ms)"
  row "checkpoint (micro)" "extra task-thread time per checkpoint (BeforeWrite copying)" "$v" "ms" "" "$load" \
    "$(calc "round($kg)") of 128 key groups copied by the task thread; records/s $(calc "round($base/1e6,2)") M -> $(calc "round($rate/1e6,2)") M during the write; slowest 64 records $(calc "round($stall,2)") ms"

  run_bench status_bench
  f="$results_dir/status_bench.json"
  v="$(value bench "$f" BM_StatusSnapshot/128 real_time)"
  kb="$(value bench "$f" BM_StatusSnapshot/128 bytes)"
  d="$(value bench "$f" BM_DumpOnly/128 real_time)"
  one="$(value bench "$f" BM_StatusSnapshot/1 real_time)"
  row "coordinator" "REST status snapshot of a 128-subtask job, 11 checkpoints (built every 250 ms)" \
    "$v" "ms" "<= 62.5" "$load" "$(calc "round($kb/1e3)") kB; the dump alone $(calc "round($d,2)") ms; a 1-subtask job $(calc "round($one,3)") ms"
fi

if [ "$micro" -eq 1 ]; then
  run_bench kafka_source_bench
  f="$results_dir/kafka_source_bench.json"
  base="$(value bench "$f" BM_PlainConsumeLoop items_per_second)"
  v="$(value bench "$f" BM_KafkaSourceReader items_per_second)"
  row "kafka source" "KafkaSourceReader, 4 partitions, JSON parsed (mock cluster over TCP)" \
    "$(calc "$v/1e6")" "M records/s" ">= 0.7x plain" "$load" \
    "plain librdkafka consume loop of the same topic, same run: $(calc "round($base/1e6,3)") M/s ($(calc "round($v/$base,2)")x)"
fi

if [ "$rocksdb_micro" -eq 1 ]; then
  run_bench rocksdb_state_bench
  f="$results_dir/rocksdb_state_bench.json"
  heap="$(value bench "$f" BM_HeapValueStateReadUpdate/1000000/0 items_per_second)"
  m=BM_RocksDbValueStateReadUpdate/keys:1000000/block_cache_MiB:8
  v="$(value bench "$f" "$m/write_cache_MiB:0" items_per_second)"
  disk="$(value bench "$f" "$m/write_cache_MiB:0" disk_MB)"
  row "RocksDB state" "ValueState<int64> read+update, 1 M keys, RocksDB, 8 MiB block cache, no write cache" \
    "$(calc "$v/1e6")" "M ops/s" ">= 1" "$load" "$(calc "round($disk)") MB of SST files, memtables 8 MiB; one key at a time, keys in a fixed cycle (a cache cannot hit)"
  v="$(value bench "$f" "$m/write_cache_MiB:64" items_per_second)"
  row "RocksDB state" "same, 64 MiB write-back cache (the default)" "$(calc "$v/1e6")" "M ops/s" ">= 1" "$load"
  m=BM_RocksDbValueStateReadUpdate/keys:20000/block_cache_MiB:8
  v="$(value bench "$f" "$m/write_cache_MiB:0" items_per_second)"
  row "RocksDB state" "ValueState<int64> read+update, 20 k keys, RocksDB, no write cache" "$(calc "$v/1e6")" "M ops/s" "" "$load"
  v="$(value bench "$f" "$m/write_cache_MiB:8" items_per_second)"
  row "RocksDB state" "same, 8 MiB write-back cache" "$(calc "$v/1e6")" "M ops/s" "" "$load"
  v="$(value bench "$f" BM_HeapValueStateReadUpdate/20000/0 items_per_second)"
  row "RocksDB state" "same, heap backend (same binary and run)" "$(calc "$v/1e6")" "M ops/s" "" "$load"
  row "RocksDB state" "1 M keys, heap backend (same binary and run)" "$(calc "$heap/1e6")" "M ops/s" "" "$load"
fi

# ---- end to end --------------------------------------------------------------------------------
if [ "$e2e" -eq 1 ]; then
  run_dir="$results_dir/cluster"
  step "starting a local cluster: 1 coordinator + 2 workers (run dir $run_dir)"
  endpoint="$("$ROOT/scripts/start-cluster.sh" --workers 2 --port 0 --run-dir "$run_dir" \
    --build-dir "$build_dir")"
  kf_use_cluster_keys "$run_dir"  # the CLI's client key (KEYFLOW_KEYS)
  KEYFLOW="$BIN/keyflow"
  run_no=0

  # The field-reading job: running-sum of "amount" with one interval of 12 h, so that it keeps
  # one timer per key, as count-window does with its 12 h timeout (the jobs then differ in
  # reading a field, not in their number of timers).
  RUNNING_SUM=(--job-library "$build_dir/lib/keyflow/examples/librunning-sum.so" --job running-sum
    --param field=amount --param interval=12h)
  COUNT_WINDOW=(--job count-window --param time=event)

  # run_job KEYS CHECKPOINT_INTERVAL [JOB ARGS...]: one job (default: count-window in event time)
  # at P = 2 with --wait; sets rate (records/s = records in / job duration), job_load, and for
  # checkpointed runs leaves checkpoints-<n>.json; job_ms: the job's duration. When run_input is
  # set, the job reads it (run_events events) instead of gen: with $events events and KEYS keys.
  run_input="" run_events=""
  run_job() {
    local k="$1" interval="$2" input out args job=("${@:3}") want="${run_events:-$events}"
    [ ${#job[@]} -gt 0 ] || job=("${COUNT_WINDOW[@]}")
    run_no=$((run_no + 1))
    input="${run_input:-gen:events=$events,keys=$k,splits=2,seed=42}"
    out="$run_dir/output-$run_no"
    args=(run --coordinator "$endpoint" "${job[@]}" --input "$input"
      --output "$out" --parallelism 2 --wait)
    [ "$interval" = 0 ] || args+=(--checkpoint-interval "$interval")
    job_load="$(load1)"
    step "run $run_no: keyflow ${args[*]} (load $job_load)"
    timeout 1800 "$KEYFLOW" "${args[@]}" >"$results_dir/run-$run_no.out" 2>&1 ||
      { cat "$results_dir/run-$run_no.out" >&2; kf_die "run $run_no failed (logs in $run_dir)"; }
    "$KEYFLOW" status --json --coordinator "$endpoint" >"$results_dir/status-$run_no.json" ||
      kf_die "run $run_no: keyflow status --json failed (logs in $run_dir)"
    if [ "$interval" != 0 ]; then
      "$KEYFLOW" checkpoints --json --coordinator "$endpoint" >"$results_dir/checkpoints-$run_no.json" ||
        kf_die "run $run_no: keyflow checkpoints --json failed (logs in $run_dir)"
    fi
    local state records ms
    state="$(value job "$results_dir/status-$run_no.json" state)"
    records="$(value job "$results_dir/status-$run_no.json" records_in)"
    ms="$(value job "$results_dir/status-$run_no.json" duration_ms)"
    [ "$state" = FINISHED ] || kf_die "run $run_no ended in state $state"
    [ "$records" = "$want" ] || kf_die "run $run_no read $records records instead of $want"
    rate="$(calc "$records * 1000 / $ms")"
    job_ms="$ms"
    echo "run $run_no: $records records in $ms ms = $(calc "round($rate)") records/s" >&2
    rm -rf "$out"  # the output is not what is measured; free the disk
  }

fi
if [ "$e2e" -eq 1 ] && [ "$throughput" -eq 1 ]; then
  # Issue 3: throughput against the single-thread baseline, on the same records.
  input="gen:events=$events,keys=$keys,splits=2,seed=42"
  rates=() field_rates=() base_rates=() loads=()
  for ((r = 0; r < repeat; r++)); do
    run_job "$keys" 0
    rates+=("$rate")
    loads+=("$job_load")
    run_job "$keys" 0 "${RUNNING_SUM[@]}"
    field_rates+=("$rate")
    loads+=("$job_load")
    load="$(load1)"
    step "baseline_bench --input=$input (load $load)"
    "$BIN/baseline_bench" --input="$input" --benchmark_out="$results_dir/baseline-$r.json" \
      --benchmark_out_format=json >&2
    base_rates+=("$(value bench "$results_dir/baseline-$r.json" BM_KeyedCountBaseline items_per_second)")
    gen_rate="$(value bench "$results_dir/baseline-$r.json" BM_GenerateOnly items_per_second)"
  done
  job_rate="$(median "${rates[@]}")"
  base_rate="$(median "${base_rates[@]}")"
  note="count-window event time, P = 2, $events events, $keys keys; median of $repeat"
  row "end to end" "records/s, keyflow cluster" "$(calc "$job_rate/1e6")" "M/s" "" "${loads[*]}" "$note"
  row "end to end" "records/s, single-thread flat-hash-map count (baseline)" "$(calc "$base_rate/1e6")" "M/s" "" "$load" "same generated records, absl::flat_hash_map<Key, int64_t>; the generator alone: $(calc "round($gen_rate/1e6,1)") M/s"
  row "end to end" "ratio cluster / baseline" "$(calc "$job_rate/$base_rate")" "" ">= 0.3" "${loads[*]}"
  field_rate="$(median "${field_rates[@]}")"
  note="running-sum (examples) of \"amount\", interval 12h, gen: records with a 100-byte \"note\" field, which the source drops (the job declares only \"amount\"); same runs, alternating with count-window; median of $repeat"
  row "end to end" "records/s, field-reading job (running-sum)" "$(calc "$field_rate/1e6")" "M/s" "" "${loads[*]}" "$note"
  row "end to end" "ratio field-reading job / count-window" "$(calc "$field_rate/$job_rate")" "" ">= 0.5" "${loads[*]}"

fi
if [ "$e2e" -eq 1 ] && [ "$chaining" -eq 1 ]; then
  # Job graphs: Map and Filter chained before the KeyBy vs the same logic in the keyed function.
  CHAIN_LIB="$build_dir/tests/bench/libchain-jobs.so"
  graph_rates=() inline_rates=() loads=()
  for ((r = 0; r < repeat; r++)); do
    run_job "$keys" 0 --job-library "$CHAIN_LIB" --job chain-graph
    graph_rates+=("$rate")
    loads+=("$job_load")
    run_job "$keys" 0 --job-library "$CHAIN_LIB" --job chain-inline
    inline_rates+=("$rate")
    loads+=("$job_load")
  done
  graph_rate="$(median "${graph_rates[@]}")"
  inline_rate="$(median "${inline_rates[@]}")"
  note="tests/bench/jobs/chain_jobs.cc, P = 2, $events events, $keys keys (gen: uid, amount and a 100-byte note, dropped at the source); alternating; median of $repeat"
  row "end to end" "records/s, Map -> Filter chained before the KeyBy (chain-graph)" "$(calc "$graph_rate/1e6")" "M/s" "" "${loads[*]}" "$note"
  row "end to end" "records/s, the same inside one function (chain-inline)" "$(calc "$inline_rate/1e6")" "M/s" "" "${loads[*]}" "$note"
  row "end to end" "ratio chained / one function" "$(calc "$graph_rate/$inline_rate")" "" ">= 0.95" "${loads[*]}"
fi
if [ "$e2e" -eq 1 ] && [ "$nexmark" -eq 1 ]; then
  # Issue 31: the Nexmark queries without a keyed stage, on the Nexmark source of the example
  # library (events generated in the source task, parsed like any JSON input).
  NEXMARK_LIB="$build_dir/lib/keyflow/examples/libnexmark.so"
  cpus="$(nproc)"
  for q in q0 q1 q2; do
    q_rates=() loads=()
    for ((r = 0; r < repeat; r++)); do
      run_input="connector:nexmark:events=$nexmark_events,splits=2" run_events="$nexmark_events" \
        run_job 0 1s --job-library "$NEXMARK_LIB" --job "$q"
      q_rates+=("$rate")
      loads+=("$job_load")
    done
    q_rate="$(median "${q_rates[@]}")"
    note="worker/jobs/nexmark, connector:nexmark:events=$nexmark_events,splits=2, P = 2, --checkpoint-interval 1s, file sink; median of $repeat (runs M/s: $(mps "${q_rates[@]}"))"
    row "nexmark" "events/s, $q" "$(calc "$q_rate/1e6")" "M/s" "" "${loads[*]}" "$note"
    target="" flink=""
    if [ "$q" = q0 ]; then target=">= 1.14" flink="target: 3x Flink's published Nexmark figure for q0, ~380 K events/s per core"; fi
    row "nexmark" "events/s per core ($cpus CPUs), $q" "$(calc "$q_rate/$cpus/1e6")" "M/s" "$target" "${loads[*]}" "$flink"
  done
fi
if [ "$e2e" -eq 1 ] && [ "$security" -eq 1 ]; then
  # Issue 13: the same job on a secure cluster (CURVE on the control and data planes) and on an
  # --insecure one, alternating run by run so that both see the same machine load.
  insecure_run_dir="$results_dir/cluster-insecure"
  step "starting a second local cluster with --insecure (run dir $insecure_run_dir)"
  insecure_endpoint="$("$ROOT/scripts/start-cluster.sh" --workers 2 --port 0 --insecure \
    --run-dir "$insecure_run_dir" --build-dir "$build_dir")"
  secure_endpoint="$endpoint" secure_keys="${KEYFLOW_KEYS-}"
  curve_rates=() plain_rates=() loads=()
  for ((r = 0; r < repeat; r++)); do
    run_job "$keys" 0
    curve_rates+=("$rate")
    loads+=("$job_load")
    endpoint="$insecure_endpoint"
    unset KEYFLOW_KEYS  # the CLI talks to the --insecure cluster without a key
    run_job "$keys" 0
    plain_rates+=("$rate")
    loads+=("$job_load")
    endpoint="$secure_endpoint"
    [ -z "$secure_keys" ] || export KEYFLOW_KEYS="$secure_keys"
  done
  curve_rate="$(median "${curve_rates[@]}")"
  plain_rate="$(median "${plain_rates[@]}")"
  note="count-window event time, P = 2, $events events, $keys keys; alternating; median of $repeat (runs M/s: CURVE $(mps "${curve_rates[@]}"), insecure $(mps "${plain_rates[@]}"))"
  row "security (e2e)" "records/s, CURVE (secure cluster)" "$(calc "$curve_rate/1e6")" "M/s" "" "${loads[*]}" "$note"
  row "security (e2e)" "records/s, --insecure" "$(calc "$plain_rate/1e6")" "M/s" "" "${loads[*]}"
  row "security (e2e)" "ratio CURVE / --insecure" "$(calc "$curve_rate/$plain_rate")" "" ">= 0.85" "${loads[*]}"
fi
if [ "$e2e" -eq 1 ] && [ "$metrics" -eq 1 ]; then
  # Issue 12: the same job with the coordinator's /metrics scraped every second (as Prometheus
  # does) and not scraped, alternating run by run on the same cluster.
  [ -f "$run_dir/rest.port" ] || kf_die "the cluster has no REST port ($run_dir/rest.port)"
  metrics_url="$(cat "$run_dir/rest.url")/metrics"
  # A secure cluster's REST server is HTTPS with tokens: kf_rest_curl pins its certificate and
  # sends its viewer token (RUN_DIR/cluster.env), as a Prometheus scrape would.
  kf_rest_curl "$run_dir" /metrics -o "$results_dir/metrics.txt" ||
    kf_die "cannot GET $metrics_url: is curl installed (scripts/install-deps.sh)?"
  # scrape_loop URL FILE: GET URL every second; FILE holds the number of successful scrapes.
  scrape_loop() {
    local n=0
    while true; do
      if kf_rest_curl "$run_dir" /metrics -o /dev/null --max-time 5; then
        n=$((n + 1))
        echo "$n" >"$2.tmp" && mv "$2.tmp" "$2"  # a reader never sees a half-written file
      fi
      sleep 1
    done
  }
  scrapes=()
  unscraped_run() { run_job "$keys" 0; }
  scraped_run() {
    local f="$results_dir/scrapes-$((run_no + 1))"
    echo 0 >"$f"
    scrape_loop "$metrics_url" "$f" &
    scraper_pid=$!
    run_job "$keys" 0
    kill "$scraper_pid" 2>/dev/null || true
    wait "$scraper_pid" 2>/dev/null || true
    scraper_pid=""
    scrapes+=("$(cat "$f")")
  }
  # A = not scraped, B = scraped: warm-up, AB BA pairs, per-pair ratios, CPU per record.
  abba_compare unscraped_run scraped_run
  [ "${scrapes[0]}" -gt 0 ] || kf_die "the scraper never reached $metrics_url"
  l="${ab_loads[*]}"
  note="count-window event time, P = 2, $events events, $keys keys; $warmup warm-up run(s) discarded, then $repeat pairs AB BA ... (A not scraped, B scraped); runs M/s: not scraped $(mps "${ab_rates_a[@]}"), scraped $(mps "${ab_rates_b[@]}"); scrapes per run ${scrapes[*]}; /metrics $(wc -c <"$results_dir/metrics.txt") bytes"
  row "metrics (e2e)" "records/s, not scraped (median)" "$(calc "$(median "${ab_rates_a[@]}")/1e6")" "M/s" "" "$l" "$note"
  row "metrics (e2e)" "records/s, /metrics scraped every second (median)" "$(calc "$(median "${ab_rates_b[@]}")/1e6")" "M/s" "" "$l"
  row "metrics (e2e)" "throughput loss when scraped (median of the per-pair ratios)" \
    "$(calc "(1 - $ab_ratio) * 100")" "%" "<= 2" "$l" "per-pair scraped/not: ${ab_ratios[*]}"
  row "metrics (e2e)" "CPU ms per M records, coordinator + workers, not scraped (median)" \
    "$(median "${ab_cpu_a[@]}")" "ms" "" "$l" "runs: $(rounded "${ab_cpu_a[@]}")"
  row "metrics (e2e)" "CPU ms per M records, coordinator + workers, scraped (median)" \
    "$(median "${ab_cpu_b[@]}")" "ms" "" "$l" "runs: $(rounded "${ab_cpu_b[@]}")"
  row "metrics (e2e)" "extra CPU when scraped (median of the per-pair ratios)" \
    "$(calc "($ab_cpu_ratio - 1) * 100")" "%" "<= 2" "$l" "per-pair scraped/not: ${ab_cpu_ratios[*]}"
  row "metrics (e2e)" "coordinator CPU per second of job, not scraped (median)" \
    "$(median "${ab_coord_a[@]}")" "ms/s" "" "$l" "runs: $(rounded "${ab_coord_a[@]}")"
  row "metrics (e2e)" "coordinator CPU per second of job, scraped (median)" \
    "$(median "${ab_coord_b[@]}")" "ms/s" "" "$l" "runs: $(rounded "${ab_coord_b[@]}")"
fi
if [ "$e2e" -eq 1 ] && [ "$rocksdb" -eq 1 ]; then
  # Issue 11: count-window with the RocksDB state backend against the heap, alternating.
  heap_rates=() rocks_rates=() loads=()
  for ((r = 0; r < repeat; r++)); do
    run_job "$keys" 0
    heap_rates+=("$rate")
    loads+=("$job_load")
    run_job "$keys" 0 "${COUNT_WINDOW[@]}" --state-backend rocksdb --state-dir "$run_dir/state"
    rocks_rates+=("$rate")
    loads+=("$job_load")
  done
  h="$(median "${heap_rates[@]}")"
  k="$(median "${rocks_rates[@]}")"
  note="count-window event time, P = 2, $events events, $keys keys; alternating; median of $repeat (runs M/s: heap $(mps "${heap_rates[@]}"), rocksdb $(mps "${rocks_rates[@]}"))"
  row "RocksDB state (e2e)" "records/s, --state-backend heap" "$(calc "$h/1e6")" "M/s" "" "${loads[*]}" "$note"
  row "RocksDB state (e2e)" "records/s, --state-backend rocksdb" "$(calc "$k/1e6")" "M/s" "" "${loads[*]}"
  row "RocksDB state (e2e)" "ratio rocksdb / heap" "$(calc "$k/$h")" "" ">= 0.4" "${loads[*]}"
fi
if [ "$e2e" -eq 1 ] && [ "$ckpt_runs" -eq 1 ]; then
  # Issue 4 (and 11 for rocksdb): the same job with and without periodic checkpoints (1 M keys
  # per worker), per state backend.
  for backend in $ckpt_backends; do
    bargs=("${COUNT_WINDOW[@]}")
    section="checkpoints (e2e)"
    if [ "$backend" = rocksdb ]; then
      bargs+=(--state-backend rocksdb --state-dir "$run_dir/state")
      section="checkpoints (e2e, rocksdb)"
    fi
    plain=() ckpt=() loads=() files=()
    for ((r = 0; r < repeat; r++)); do
      run_job "$ckpt_keys" 0 "${bargs[@]}"
      plain+=("$rate")
      loads+=("$job_load")
      run_job "$ckpt_keys" 1s "${bargs[@]}"
      ckpt+=("$rate")
      loads+=("$job_load")
      files+=("$results_dir/checkpoints-$run_no.json")
    done
    p="$(median "${plain[@]}")"
    c="$(median "${ckpt[@]}")"
    note="--state-backend $backend, $events events, $ckpt_keys keys (per worker $(calc "$ckpt_keys//2") keys + timers at the end); median of $repeat"
    row "$section" "records/s without checkpoints" "$(calc "$p/1e6")" "M/s" "" "${loads[*]}" "$note"
    row "$section" "records/s with --checkpoint-interval 1s" "$(calc "$c/1e6")" "M/s" "" "${loads[*]}"
    row "$section" "throughput loss with checkpoints" "$(calc "(1 - $c/$p) * 100")" "%" "<= 10" "${loads[*]}"
    # Checkpoint statistics of the checkpointed runs (those taken after the end of input apart:
    # scripts/bench-lib/bench_results.py).
    value checkpoints --logs "$run_dir" "${files[@]}" >"$results_dir/checkpoint-stats-$backend.txt"
    read -r n sync_med sync_max async_med async_max dur_med dur_max bytes_med bytes_max \
      n_after sync_after <"$results_dir/checkpoint-stats-$backend.txt"
    l="${loads[*]}"
    if [ "$n" -gt 0 ]; then
      note="$n checkpoints while the job held state ($(calc "round($bytes_max/1e6)") MB per checkpoint, both subtasks)"
      row "$section" "synchronous pause, slowest subtask (median)" "$(calc "$sync_med/1e3")" "ms" "<= 10" "$l" "$note"
      row "$section" "synchronous pause, slowest subtask (max)" "$(calc "$sync_max/1e3")" "ms" "<= 10" "$l" \
        "after the end of input ($n_after checkpoints, the sink flushing the last output): max $(calc "round($sync_after/1e3,1)") ms"
      row "$section" "async write, slowest subtask (median)" "$(calc "$async_med/1e3")" "ms" "" "$l"
      row "$section" "trigger -> complete (median)" "$dur_med" "ms" "<= 500" "$l"
      row "$section" "trigger -> complete (max)" "$dur_max" "ms" "<= 500" "$l"
    else
      row "$section" "checkpoints while the job held state" "0" "" "" "$l" "every checkpoint was taken after the end of input ($n_after of them): raise --events or --ckpt-keys"
    fi
  done
fi
if [ "$e2e" -eq 1 ] && [ "$incremental" -eq 1 ]; then
  # Issue 11: incremental checkpoints on a hot set (10 M keys, 1 % of them changing per interval)
  # against --incremental false in the same run, and on the uniform workload, per backend.
  hot="gen:events=$((3 * incr_keys)),keys=$incr_keys,splits=2,seed=42,hot=0.01"
  uniform="gen:events=$((3 * incr_keys)),keys=$incr_keys,splits=2,seed=42"
  [ -z "$incr_rate" ] || { hot+=",rate=$incr_rate"; uniform+=",rate=$incr_rate"; }
  run_events=$((3 * incr_keys))
  # incr_run INPUT INCREMENTAL BACKEND: one checkpointed run; sets written (median bytes written
  # per steady-state checkpoint), full (median full state size), dur_med, dur_max, n.
  incr_run() {
    local bargs=("${COUNT_WINDOW[@]}" --incremental "$2")
    [ "$3" = heap ] || bargs+=(--state-backend rocksdb --state-dir "$run_dir/state")
    run_input="$1"
    run_job "$incr_keys" 1s "${bargs[@]}"
    loads+=("$job_load")
    read -r n written full dur_med dur_max \
      <<<"$(value incremental --logs "$run_dir" "$results_dir/checkpoints-$run_no.json")"
    for v in written full dur_med dur_max; do [ "${!v}" != - ] || printf -v "$v" ''; done
  }
  for backend in heap rocksdb; do
    section="incremental checkpoints ($backend)"
    loads=()
    incr_run "$hot" true "$backend"
    hot_written="$written" hot_full="$full" hot_n="$n" hot_dur="$dur_med" hot_max="$dur_max"
    incr_run "$hot" false "$backend"
    full_written="$written" full_n="$n" full_dur="$dur_med"
    incr_run "$uniform" true "$backend"
    uni_written="$written" uni_full="$full" uni_n="$n"
    l="${loads[*]}"
    mb() { [ -z "$1" ] || calc "round($1/1e6, 3)"; }
    note="count-window event time, P = 2, $incr_keys keys, 3x as many events, 1 s interval; hot set gen:...,hot=0.01; medians over the second half of the checkpoints taken while the job held state ($hot_n incremental, $full_n full)"
    row "$section" "bytes written per checkpoint, hot set, incremental" "$(mb "$hot_written")" "MB" "" "$l" "$note"
    row "$section" "bytes written per checkpoint, hot set, --incremental false" "$(mb "$full_written")" "MB" "" "$l" "full state referenced by the incremental ones: $(mb "$hot_full") MB"
    ratio=""
    [ -z "$hot_written" ] || [ -z "$full_written" ] || ratio="$(calc "$hot_written / $full_written * 100")"
    row "$section" "incremental / full bytes, hot set" "$ratio" "%" "<= 5" "$l"
    row "$section" "trigger -> complete, hot set, incremental (median)" "$hot_dur" "ms" "<= 300" "$l" "max $hot_max ms; --incremental false: median $full_dur ms"
    ratio=""
    [ -z "$uni_written" ] || [ -z "$uni_full" ] || ratio="$(calc "$uni_written / $uni_full * 100")"
    if [ "$backend" = heap ]; then
      note="every key group holds a changed key in every interval, so key-group granularity writes about all of it"
    else
      note="RocksDB writes the SST files flushed and compacted since the previous checkpoint"
    fi
    row "$section" "uniform workload: written / full state, incremental" "$ratio" "%" "" "$l" "$uni_n checkpoints; $note"
  done
  run_input="" run_events=""
fi
if [ "$e2e" -eq 1 ] && [ "$rocksdb" -eq 1 ]; then
  # Issue 11: state larger than memory on a fresh cluster (its workers' peak RSS is this job's):
  # count-window with big_keys keys, each exactly once (gen: hot=1: the first pass is every key
  # once), timeout 12 h so that every window stays open until the end of input.
  big_run_dir="$results_dir/cluster-big"
  step "starting a fresh local cluster for the larger-than-memory run (run dir $big_run_dir)"
  big_endpoint="$("$ROOT/scripts/start-cluster.sh" --workers 2 --port 0 --run-dir "$big_run_dir" \
    --build-dir "$build_dir")" ||
    kf_die "could not start the cluster of the larger-than-memory run (logs in $big_run_dir)"
  kf_use_cluster_keys "$big_run_dir"  # this cluster has its own key set
  samples="$results_dir/big-samples.txt"
  : >"$samples"
  args=(run --coordinator "$big_endpoint" "${COUNT_WINDOW[@]}" --parallelism 2 --wait
    --input "gen:events=$big_keys,keys=$big_keys,splits=2,seed=42,hot=1"
    --output "$big_run_dir/output" --state-backend rocksdb --state-dir "$big_run_dir/state")
  job_load="$(load1)"
  step "keyflow ${args[*]} (load $job_load)"
  "$KEYFLOW" "${args[@]}" >"$results_dir/big.out" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    # disk and memory state bytes over the subtasks, and the workers' VmRSS (kB)
    { "$KEYFLOW" status --json --coordinator "$big_endpoint" 2>/dev/null || true; } |
      value state-sample >>"$samples"
    sleep 1
  done
  wait "$pid" || { cat "$results_dir/big.out" >&2; kf_die "the larger-than-memory run failed (logs in $big_run_dir)"; }
  hwm=0
  for f in "$big_run_dir"/worker-*.pid; do
    wpid="$(kf_pid_from_file "$f")"
    [ -n "$wpid" ] || continue
    h="$(awk '/^VmHWM/{print $2}' "/proc/$wpid/status" 2>/dev/null || echo 0)"
    [ "${h:-0}" -le "$hwm" ] || hwm="$h"
  done
  # the sample with the most bytes on disk (then in memory)
  read -r disk mem <<<"$(sort -k1,1n -k2,2n "$samples" | tail -n 1)"
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$big_run_dir" >/dev/null 2>&1 || true
  big_stopped=1
  kf_use_cluster_keys "$run_dir"  # back to the first cluster's keys
  rm -rf "$big_run_dir/output" "$big_run_dir/state"
  # The RocksDB backend's default memory per subtask (state/rocksdb/rocksdb_state_options.h), MiB.
  block_cache_mib=64 memtable_mib=64 write_cache_mib=64
  budget=$((2 * (block_cache_mib + memtable_mib) * 1024 * 1024))  # block cache + memtables, P = 2
  note="count-window, --state-backend rocksdb, P = 2, $big_keys keys once each (windows open until the end); peak of $(wc -l <"$samples") one-a-second samples"
  disk_mb="" ratio=""
  if [ -n "${disk:-}" ]; then
    disk_mb="$(calc "$disk/1e6")" ratio="$(calc "$disk/$budget")"
    note+="; in memory (memtables + block cache) $(calc "round($mem/1e6)") MB"
  else
    note+=": the job ended before a status sample, raise --big-keys"
  fi
  row "RocksDB state (e2e)" "state on disk (both subtasks, peak)" "$disk_mb" "MB" "" "$job_load" "$note"
  row "RocksDB state (e2e)" "state / (block cache + memtables)" "$ratio" "x" ">= 4" "$job_load"
  # The backend's own memory is bounded by block cache + memtables + write-back cache (one subtask
  # per worker here); the timers stay on the heap (requirement 3: one per open window, big_keys / 2
  # per worker), so RSS grows with them.
  row "RocksDB state (e2e)" "worker peak RSS (VmHWM, larger worker)" "$(calc "$hwm/1024")" "MiB" "" "$job_load" \
    "backend budget $((block_cache_mib + memtable_mib + write_cache_mib)) MiB per subtask (block cache + memtables + write cache) plus $((big_keys / 2)) heap timers per worker"

  # Rescale 1 -> 2 -> 1 on RocksDB (scripts/bench-rescale.sh starts its own cluster).
  step "scripts/bench-rescale.sh --state-backend rocksdb --keys $rescale_keys (load $(load1))"
  rc=0
  # (its work directory, kept when a step fails, goes to the results dir)
  TMPDIR="$results_dir" "$ROOT/scripts/bench-rescale.sh" --state-backend rocksdb \
    --keys "$rescale_keys" --build-dir "$build_dir" >"$results_dir/rescale-rocksdb.md" \
    2>"$results_dir/rescale-rocksdb.log" || rc=$?
  cat "$results_dir/rescale-rocksdb.md" >&2
  # Exit 1 with a table is a missed target (a result); no table is a failed step.
  grep -q '^| 1 -> 2 |' "$results_dir/rescale-rocksdb.md" || {
    kf_log_excerpt "$results_dir/rescale-rocksdb.log"
    kf_die "scripts/bench-rescale.sh --state-backend rocksdb failed (exit $rc; log $results_dir/rescale-rocksdb.log)"
  }
  for move in "1 -> 2" "2 -> 1"; do
    ms="$(sed -n "s/^| $move | [^|]* | [^|]* | \([0-9.]*\) s |.*/\1/p" "$results_dir/rescale-rocksdb.md")"
    row "RocksDB rescale (e2e)" "rescale $move: command -> processing again" "$ms" "s" "<= 10" "$(load1)" \
      "$rescale_keys keys, scripts/bench-rescale.sh --state-backend rocksdb (exit $rc); table in rescale-rocksdb.md"
  done
fi

if [ "$e2e" -eq 1 ] && [ "$latency" -eq 1 ]; then
  # Issue 12: latency from the latency markers. First the maximum throughput of count-window,
  # with --latency-interval 0 (A) and with markers every 200 ms (B, the default) on the same
  # input: warm-up, AB BA pairs, per-pair ratios, CPU per record (scripts/bench-lib/abba.sh).
  markers_off_run() { run_job "$keys" 0 "${COUNT_WINDOW[@]}" --latency-interval 0; }
  markers_on_run() { run_job "$keys" 0; }
  abba_compare markers_off_run markers_on_run
  l="${ab_loads[*]}"
  max_rate="$(median "${ab_rates_b[@]}")"
  off_rate="$(median "${ab_rates_a[@]}")"
  note="count-window event time, P = 2, $events events, $keys keys; $warmup warm-up run(s) discarded, then $repeat pairs AB BA ... (A no markers, B markers); runs M/s: markers $(mps "${ab_rates_b[@]}"), off $(mps "${ab_rates_a[@]}")"
  row "latency" "records/s, markers every 200 ms (default; median)" "$(calc "$max_rate/1e6")" "M/s" "" "$l" "$note"
  row "latency" "records/s, --latency-interval 0 (no markers; median)" "$(calc "$off_rate/1e6")" "M/s" "" "$l"
  row "latency" "ratio markers / no markers (median of the per-pair ratios)" "$ab_ratio" "" ">= 0.98" "$l" \
    "per pair: ${ab_ratios[*]}"
  row "latency" "CPU per record, markers / no markers (median of the per-pair ratios)" \
    "$ab_cpu_ratio" "" "<= 1.02" "$l" "per pair: ${ab_cpu_ratios[*]}; CPU ms per M records (coordinator + workers): markers $(rounded "${ab_cpu_b[@]}"), off $(rounded "${ab_cpu_a[@]}")"

  # Then a rate-limited generator at 50 % of that maximum, for latency_seconds, sampled once a
  # second after a 5 s warm-up: the slowest subtask's p50 and p99 (over its last 10 s).
  half="$(calc "int($max_rate / 2)")"
  lat_events="$(calc "$half * $latency_seconds")"
  # latency_run CHECKPOINT_INTERVAL: sets p50 and p99 (ms, medians of the samples) and job_load.
  latency_run() {
    local interval="$1" args pid samples="$results_dir/latency-samples-$((run_no + 1)).txt"
    run_no=$((run_no + 1))
    args=(run --coordinator "$endpoint" "${COUNT_WINDOW[@]}" --parallelism 2 --wait
      --input "gen:events=$lat_events,keys=$keys,splits=2,seed=42,rate=$half"
      --output "$run_dir/output-$run_no")
    [ "$interval" = 0 ] || args+=(--checkpoint-interval "$interval")
    job_load="$(load1)"
    step "run $run_no: keyflow ${args[*]} (load $job_load)"
    "$KEYFLOW" "${args[@]}" >"$results_dir/run-$run_no.out" 2>&1 &
    pid=$!
    : >"$samples"
    sleep 5  # warm-up: the job deploys and its first markers arrive
    while kill -0 "$pid" 2>/dev/null; do
      { "$KEYFLOW" status --json --coordinator "$endpoint" 2>/dev/null || true; } |
        value latency-sample >>"$samples"
      sleep 1
    done
    wait "$pid" || { cat "$results_dir/run-$run_no.out" >&2; kf_die "run $run_no failed (logs in $run_dir)"; }
    rm -rf "$run_dir/output-$run_no"
    [ -s "$samples" ] || kf_die "run $run_no: no latency sample (raise --latency-seconds)"
    p50="$(median $(cut -d' ' -f1 "$samples"))"
    p99="$(median $(cut -d' ' -f2 "$samples"))"
    echo "run $run_no: $(wc -l <"$samples") samples, p50 $p50 ms, p99 $p99 ms" >&2
  }
  latency_run 0
  note="count-window event time, P = 2, gen: rate=$half (50 % of the maximum above), $keys keys, ${latency_seconds} s; slowest subtask, median of one sample a second"
  row "latency" "p50, no checkpoints" "$p50" "ms" "" "$job_load" "$note"
  row "latency" "p99, no checkpoints" "$p99" "ms" "" "$job_load"
  latency_run 1s
  row "latency" "p50, --checkpoint-interval 1s" "$p50" "ms" "" "$job_load"
  row "latency" "p99, --checkpoint-interval 1s" "$p99" "ms" "" "$job_load"
fi

# ---- table -------------------------------------------------------------------------------------
step "results ($results_dir/results.md)"
{
  echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') by scripts/bench.sh$([ "$quick" -eq 0 ] || echo ' --quick (smoke sizes: not comparable to the targets)');"
  cat "$results_dir/machine.txt"
  echo
  python3 "$RESULTS_PY" table "$ROWS"
} | tee "$results_dir/results.md"
echo >&2
echo "raw JSON and logs: $results_dir" >&2
