#!/usr/bin/env bash
# Keeps one keyflow worker alive (start-cluster.sh --respawn): starts it, and whenever it dies
# starts it again with the same command line (so under the same --slot), rewriting its pid
# file each time. Restarts back off from 1 s up to 30 s while the worker keeps dying within
# 10 s of its start (e.g. a bad flag), and reset once it stayed up. A restarted worker gets
# --previous-exit "<how the last one ended>" --previous-pid <its pid> ("exit code 3", "killed by
# signal 9 (SIGKILL — also what the kernel's OOM killer sends; ...)"), which it sends when it
# registers: the coordinator takes the slot over at once and reports how the process ended.
# A worker that crashed (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) wrote a line
# "keyflow-worker pid P crashed: SIGSEGV while running ProcessElement of job 'j' (libj.so)" to
# its log (worker/runtime/crash_handler.h): then the phrase is "died of SIGSEGV while running
# ProcessElement of job 'j' (libj.so)".
#
#   worker-supervisor.sh --pid-file FILE --log FILE -- keyflow-worker ARGS...
#
# SIGTERM/SIGINT: stop supervising and exit, leaving the current worker running (stop-cluster.sh
# stops supervisors first, then the workers by their pid files). Supervisor lines go to the
# worker's log, prefixed "supervisor:".
set -uo pipefail

pid_file="" log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pid-file) pid_file="$2"; shift 2 ;;
    --log) log="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "worker-supervisor: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [ -z "$pid_file" ] || [ -z "$log" ] || [ $# -eq 0 ]; then
  echo "usage: worker-supervisor.sh --pid-file FILE --log FILE -- COMMAND..." >&2
  exit 2
fi

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

# How process $2 with wait status $1 ended, as one phrase.
describe_exit() {
  local rc=$1 cause
  if [ "$rc" -gt 128 ]; then
    local sig=$((rc - 128)) name
    name=$(kill -l "$sig" 2>/dev/null) || name="?"
    if [ "$sig" -ne 9 ] && cause=$(crash_cause "$2"); then
      echo "died of $cause"
    elif [ "$sig" -eq 9 ]; then
      echo "killed by signal 9 (SIGKILL — also what the kernel's OOM killer sends; check dmesg and the worker log)"
    else
      echo "killed by signal $sig (SIG$name)"
    fi
  else
    echo "exit code $rc"
  fi
}

backoff=1
previous=()
while :; do
  "$@" "${previous[@]}" >>"$log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pid_file.tmp" && mv -f "$pid_file.tmp" "$pid_file"
  started=$SECONDS
  say "worker started pid=$pid"
  while :; do
    wait "$pid"
    rc=$?
    # `wait` also returns (>128) when a trapped signal arrives: the worker may still run.
    [ "$stopping" -eq 1 ] && exit 0
    kill -0 "$pid" 2>/dev/null || break
  done
  if [ $((SECONDS - started)) -ge 10 ]; then backoff=1; fi
  how=$(describe_exit "$rc" "$pid")
  say "worker pid=$pid exited with status $rc ($how); restarting in ${backoff}s"
  previous=(--previous-exit "$how" --previous-pid "$pid")
  sleep "$backoff" &
  sleeper=$!
  wait "$sleeper" 2>/dev/null
  if [ "$stopping" -eq 1 ]; then
    kill "$sleeper" 2>/dev/null
    exit 0
  fi
  backoff=$((backoff * 2 > 30 ? 30 : backoff * 2))
done
