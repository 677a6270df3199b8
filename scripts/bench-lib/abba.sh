# shellcheck shell=bash
# A/B comparisons of two configurations of the same end-to-end job on one cluster, for
# scripts/bench.sh (--metrics, --latency). Sourced by bench.sh after run_job is defined; uses its
# globals run_dir, events, repeat, warmup, results_dir and its helpers calc, median, step.
#
# The method (so that a machine that warms up or whose load changes favours neither side):
#   1. `warmup` runs of A first, discarded (page cache, allocator, cold caches: the first runs
#      of a fresh cluster are the slowest, and runs kept getting faster during a whole run);
#   2. `repeat` pairs in the order AB, BA, AB, ...: each pair's ratio B/A compares two runs
#      next to each other in time; the median of these ratios is the result;
#   3. the CPU time of the coordinator and of every worker (user + system, all threads, from
#      /proc/<pid>/stat) around each run, per million records: what a configuration costs,
#      independent of how much CPU other processes left the job (robust to load).
#
#   abba_compare FN_A FN_B   FN_* run one job each (run_job ...), leaving `rate`
#   After it: ab_rates_a/b (records/s), ab_cpu_a/b (CPU ms per million records, coordinator +
#   workers), ab_coord_a/b (coordinator CPU ms per second of job), ab_ratios (per pair, rate
#   B / rate A), ab_cpu_ratios (per pair, CPU B / CPU A), ab_loads; and the medians
#   ab_ratio, ab_cpu_ratio.

# cluster_ticks: "COORDINATOR TOTAL" — CPU clock ticks so far of the coordinator, and of the
# coordinator plus every worker of the run dir (supervisors excluded).
cluster_ticks() {
  python3 - "$run_dir" <<'EOF'
import glob, os, sys
run_dir = sys.argv[1]
def ticks(pid_file):
    try:
        pid = open(pid_file).read().strip()
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    except (OSError, ValueError, IndexError):
        return 0
coordinator = ticks(os.path.join(run_dir, "coordinator.pid"))
workers = sum(ticks(p) for p in glob.glob(os.path.join(run_dir, "worker-*.pid"))
              if not p.endswith(".supervisor.pid"))
print(coordinator, coordinator + workers)
EOF
}

# abba_one KIND FN: one measured run of FN; appends to the arrays of KIND (a or b).
abba_one() {
  local kind="$1" fn="$2" c0 t0 c1 t1 hz cpu coord
  hz="$(getconf CLK_TCK)"
  read -r c0 t0 < <(cluster_ticks)
  "$fn"
  read -r c1 t1 < <(cluster_ticks)
  cpu="$(calc "($t1 - $t0) / $hz * 1000 / ($events / 1e6)")"
  coord="$(calc "($c1 - $c0) / $hz * 1000 / ($job_ms / 1000)")"
  ab_loads+=("$job_load")
  eval "ab_rates_$kind+=(\"\$rate\") ab_cpu_$kind+=(\"\$cpu\") ab_coord_$kind+=(\"\$coord\")"
  echo "run $run_no ($kind): $(calc "round($rate)") records/s, $(calc "round($cpu)") CPU ms per M records" >&2
}

abba_compare() {
  local a="$1" b="$2" w r
  ab_rates_a=() ab_rates_b=() ab_cpu_a=() ab_cpu_b=() ab_coord_a=() ab_coord_b=() ab_loads=()
  ab_ratios=() ab_cpu_ratios=()
  for ((w = 0; w < warmup; w++)); do
    step "warm-up run $((w + 1)) of $warmup (discarded)"
    "$a"
  done
  for ((r = 0; r < repeat; r++)); do
    if ((r % 2 == 0)); then
      abba_one a "$a"
      abba_one b "$b"
    else
      abba_one b "$b"
      abba_one a "$a"
    fi
    ab_ratios+=("$(calc "round(${ab_rates_b[r]} / ${ab_rates_a[r]}, 4)")")
    ab_cpu_ratios+=("$(calc "round(${ab_cpu_b[r]} / ${ab_cpu_a[r]}, 4)")")
  done
  ab_ratio="$(median "${ab_ratios[@]}")"
  ab_cpu_ratio="$(median "${ab_cpu_ratios[@]}")"
}

# rounded VALUE...: the values with 3 significant digits, for a note; mps RATE...: records/s as
# M/s, the same way.
rounded() { python3 -c 'import sys; print(" ".join(f"{float(v):.3g}" for v in sys.argv[1:]))' "$@"; }
mps() { python3 -c 'import sys; print(" ".join(f"{float(v) / 1e6:.3g}" for v in sys.argv[1:]))' "$@"; }
