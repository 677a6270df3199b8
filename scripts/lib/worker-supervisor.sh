#!/usr/bin/env bash
# Keeps one keyflow worker alive (start-cluster.sh --respawn): starts it, and whenever it dies
# starts it again with the same command line (so under the same --slot), rewriting its pid
# file each time. Restarts back off from --restart-delay (default 1 s) doubling up to 30 s while
# the worker keeps dying within 10 s of its start (e.g. a bad flag), and reset once it stayed up.
#
# How the worker ended, as one phrase: "exit code 3", "killed by signal 15 (SIGTERM)";
# "died of SIGSEGV while running ProcessElement of job 'j' (libj.so)" when it crashed (SIGSEGV,
# SIGBUS, SIGFPE, SIGILL, SIGABRT) and its crash handler wrote "keyflow-worker pid P crashed:
# ..." to the log (worker/runtime/crash_handler.h); "out of memory: the kernel's OOM killer ended
# it (memory limit 64 MiB of cgroup /kf, peak 63.9 MiB)" when it was SIGKILLed and its memory
# cgroup counted an OOM kill meanwhile (cgroup v1 memory.oom_control or v2 memory.events
# `oom_kill`, read right after the start and after the end; the limit is the smallest
# memory.limit_in_bytes / memory.max of the cgroup and its ancestors, the peak its
# memory.max_usage_in_bytes / memory.peak); otherwise "killed by signal 9 (SIGKILL — ...)".
#
# The phrase reaches the coordinator twice, which attaches it once to the failure that lost the
# worker: at once, by `COMMAND... --report-exit PHRASE --previous-pid P` (keyflow-worker's report
# mode: the worker's own key, one WorkerExitReport, then it exits; run in the background while
# the restart delay passes), and with the restarted worker's --previous-exit PHRASE
# --previous-pid P, which it sends when it registers (its slot is taken over at once).
#
#   worker-supervisor.sh [--restart-delay SECONDS] --pid-file FILE --log FILE -- keyflow-worker ARGS...
#
# SIGTERM/SIGINT: stop supervising and exit, leaving the current worker running (stop-cluster.sh
# stops supervisors first, then the workers by their pid files). Supervisor lines go to the
# worker's log, prefixed "supervisor:".
set -uo pipefail

usage() {
  cat <<'EOF'
usage: worker-supervisor.sh [--restart-delay SECONDS] --pid-file FILE --log FILE -- COMMAND...
Keeps one keyflow worker (COMMAND, a keyflow-worker command line) running: restarts it when it
ends, after --restart-delay seconds (default 1), doubling up to 30 s while it keeps ending within
10 s of its start. Reports how it ended (exit code, signal, crash of user code, out of memory
under a cgroup memory limit) to the coordinator at once (COMMAND --report-exit ...) and again
through the restarted worker (--previous-exit/--previous-pid). SIGTERM/SIGINT: stop supervising,
leave the worker running.
  --restart-delay SECONDS  wait before the first restart (whole seconds, >= 0; default 1)
  --pid-file FILE          the running worker's pid, rewritten at every start
  --log FILE               the worker's stdout and stderr are appended here, with the
                           supervisor's lines
EOF
}

pid_file="" log="" restart_delay=1
while [ $# -gt 0 ]; do
  case "$1" in
    --pid-file) pid_file="${2-}"; shift 2 || break ;;
    --log) log="${2-}"; shift 2 || break ;;
    --restart-delay) restart_delay="${2-}"; shift 2 || break ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) echo "worker-supervisor: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$pid_file" ] || [ -z "$log" ] || [ $# -eq 0 ]; then
  usage >&2
  exit 2
fi
if ! [[ "$restart_delay" =~ ^[0-9]+$ ]]; then
  echo "worker-supervisor: --restart-delay must be whole seconds (0 or more), not '$restart_delay'" >&2
  exit 2
fi
max_delay=$((restart_delay > 30 ? restart_delay : 30))

# What it writes (the worker's .out: its lines, the print sink's) is never world-readable: the
# umask it inherits (start-cluster.sh: 077, or 027 with --group) with 027 at least.
umask "$(printf '%04o' $((8#$(umask) | 8#027)))"

say() { echo "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ) supervisor: $*" >>"$log"; }

stopping=0
trap 'stopping=1' TERM INT

# The cause the crash handler of process $1 wrote to the log, if it wrote one.
crash_cause() {
  local line
  line=$(tail -n 500 "$log" 2>/dev/null | grep -aF "keyflow-worker pid $1 crashed: " | tail -n 1)
  [ -n "$line" ] && printf '%s\n' "${line#*crashed: }"
}

# ---- memory cgroup: was it the kernel's OOM killer? ------------------------------------------

# "ROOT MOUNTPOINT" of the cgroup v1 hierarchy with controller $1, or of cgroup v2 when $1 is "".
cgroup_mount() {
  awk -v want="$1" '{
    for (i = 7; i <= NF && $i != "-"; i++) {}
    fstype = $(i + 1); super = $(i + 3)
    if (want == "" && fstype == "cgroup2") { print $4, $5; exit }
    if (want != "" && fstype == "cgroup") {
      n = split(super, opts, ",")
      for (k = 1; k <= n; k++) if (opts[k] == want) { print $4, $5; exit }
    }
  }' /proc/self/mountinfo 2>/dev/null
}

# Finds the memory cgroup of process $1: sets cg_version (v1|v2), cg_dir (its directory),
# cg_mount (the hierarchy's mount point) and cg_name (its path in the hierarchy). Fails if the
# process is gone or its cgroup has no OOM kill counter we can read.
locate_memory_cgroup() {
  local controllers path root mnt dir
  cg_version="" cg_dir="" cg_mount="" cg_name=""
  [ -r "/proc/$1/cgroup" ] || return 1
  while IFS=: read -r _ controllers path; do
    [[ ",$controllers," == *,memory,* ]] || continue
    read -r root mnt < <(cgroup_mount memory) || return 1
    [ "$root" = "/" ] && root=""
    dir="$mnt${path#"$root"}"
    if grep -qs '^oom_kill ' "$dir/memory.oom_control"; then
      cg_version=v1 cg_dir="${dir%/}" cg_mount="$mnt" cg_name="$path"
      return 0
    fi
  done <"/proc/$1/cgroup"
  path=$(sed -n 's/^0:://p' "/proc/$1/cgroup" 2>/dev/null)
  [ -n "$path" ] || return 1
  read -r root mnt < <(cgroup_mount "") || return 1
  [ "$root" = "/" ] && root=""
  dir="$mnt${path#"$root"}"
  if grep -qs '^oom_kill ' "$dir/memory.events"; then
    cg_version=v2 cg_dir="${dir%/}" cg_mount="$mnt" cg_name="$path"
    return 0
  fi
  return 1
}

# OOM kills the located cgroup counted so far (empty if unknown).
oom_kills() {
  case "$cg_version" in
    v1) awk '$1 == "oom_kill" { print $2 }' "$cg_dir/memory.oom_control" 2>/dev/null ;;
    v2) awk '$1 == "oom_kill" { print $2 }' "$cg_dir/memory.events" 2>/dev/null ;;
  esac
}

# 67004416 -> "63.9 MiB"; 67108864 -> "64 MiB".
human_bytes() {
  awk -v b="$1" 'BEGIN {
    split("B KiB MiB GiB TiB PiB", unit, " "); i = 1
    while (b >= 1024 && i < 6) { b /= 1024; i++ }
    s = sprintf("%.1f", b); sub(/\.0$/, "", s); print s " " unit[i]
  }'
}

# "out of memory: ..." for the located cgroup: its (or its closest limited ancestor's) memory
# limit and its peak usage.
out_of_memory_phrase() {
  local dir="$cg_dir" file limit="" limit_of="" value peak="" text
  [ "$cg_version" = v1 ] && file=memory.limit_in_bytes || file=memory.max
  while :; do
    value=$(cat "$dir/$file" 2>/dev/null)
    # v1 says "no limit" with a value near 2^63, v2 with "max".
    if [[ "$value" =~ ^[0-9]+$ ]] && [ "${#value}" -lt 19 ]; then
      if [ -z "$limit" ] || [ "$value" -lt "$limit" ]; then
        limit=$value limit_of="${dir#"$cg_mount"}"
      fi
    fi
    [ "$dir" = "$cg_mount" ] || [ "${#dir}" -le "${#cg_mount}" ] && break
    dir="${dir%/*}"
  done
  [ -z "$limit_of" ] && limit_of=/
  if [ "$cg_version" = v1 ]; then
    peak=$(cat "$cg_dir/memory.max_usage_in_bytes" 2>/dev/null)
  else
    peak=$(cat "$cg_dir/memory.peak" 2>/dev/null)  # Linux 5.19 and later
  fi
  if [ -n "$limit" ]; then
    text="memory limit $(human_bytes "$limit") of cgroup $limit_of"
  else
    text="cgroup $cg_name has no memory limit: the host ran out of memory"
  fi
  [[ "$peak" =~ ^[0-9]+$ ]] && text="$text, peak $(human_bytes "$peak")"
  echo "out of memory: the kernel's OOM killer ended it ($text)"
}

# How process $2 with wait status $1 ended, as one phrase; $3: its cgroup's OOM kills at its
# start (empty if unknown).
describe_exit() {
  local rc=$1 cause now
  if [ "$rc" -gt 128 ]; then
    local sig=$((rc - 128)) name
    name=$(kill -l "$sig" 2>/dev/null) || name="?"
    if [ "$sig" -ne 9 ] && cause=$(crash_cause "$2"); then
      echo "died of $cause"
    elif [ "$sig" -eq 9 ]; then
      now=$(oom_kills)
      if [ -n "$3" ] && [ -n "$now" ] && [ "$now" -gt "$3" ]; then
        out_of_memory_phrase
      else
        echo "killed by signal 9 (SIGKILL — also what the kernel's OOM killer sends; check dmesg and the worker log)"
      fi
    else
      echo "killed by signal $sig (SIG$name)"
    fi
  else
    echo "exit code $rc"
  fi
}

backoff=$restart_delay
previous=()
while :; do
  # The worker inherits this process's cgroup: count its OOM kills before it starts.
  locate_memory_cgroup $$
  oom_before=$(oom_kills)
  "$@" "${previous[@]}" >>"$log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pid_file.tmp" && mv -f "$pid_file.tmp" "$pid_file"
  started=$SECONDS
  # Its own cgroup, in case something moved it (if it is still there to ask).
  own_dir="$cg_dir"
  if locate_memory_cgroup "$pid" && [ "$cg_dir" != "$own_dir" ]; then oom_before=$(oom_kills); fi
  say "worker started pid=$pid"
  while :; do
    wait "$pid"
    rc=$?
    # `wait` also returns (>128) when a trapped signal arrives: the worker may still run.
    [ "$stopping" -eq 1 ] && exit 0
    kill -0 "$pid" 2>/dev/null || break
  done
  if [ $((SECONDS - started)) -ge 10 ]; then backoff=$restart_delay; fi
  how=$(describe_exit "$rc" "$pid" "$oom_before")
  say "worker pid=$pid exited with status $rc ($how); restarting in ${backoff}s"
  # Tell the coordinator now, not after the restart delay (a `keyflow run --wait` waits only
  # seconds for it); the restarted worker says it again, which the coordinator notes once.
  "$@" --report-exit "$how" --previous-pid "$pid" >>"$log" 2>&1 </dev/null &
  reporter=$!
  previous=(--previous-exit "$how" --previous-pid "$pid")
  sleep "$backoff" &
  sleeper=$!
  wait "$sleeper" 2>/dev/null
  if [ "$stopping" -eq 1 ]; then
    kill "$sleeper" 2>/dev/null
    exit 0
  fi
  # The report is bounded by its own timeout (a few seconds); it ends before the next one starts.
  wait "$reporter" 2>/dev/null
  [ "$stopping" -eq 1 ] && exit 0
  backoff=$((backoff * 2 > max_delay ? max_delay : backoff * 2))
  [ "$backoff" -eq 0 ] && backoff=1
done
