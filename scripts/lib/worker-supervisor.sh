#!/usr/bin/env bash
# Keeps one keyflow worker alive (start-cluster.sh --respawn): starts it, and whenever it dies
# starts it again with the same command line (so under the same --slot), rewriting its pid
# file each time. Restarts back off from --restart-delay (default 1 s) doubling up to 30 s while
# the worker keeps dying within 10 s of its start (e.g. a bad flag), and reset once it stayed up.
#
# How the worker ended, as one phrase: "exit code 3", "killed by signal 15 (SIGTERM)",
# "killed by signal 9 (SIGKILL — ...)"; "died of SIGSEGV while running ProcessElement of job 'j'
# (libj.so)" when it crashed (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) and its crash handler
# wrote "keyflow-worker pid P crashed: ..." to the log (worker/runtime/crash_handler.h).
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
10 s of its start. Reports how it ended (exit code, signal, crash of user code) to the
coordinator at once (COMMAND --report-exit ...) and again through the restarted worker
(--previous-exit/--previous-pid). SIGTERM/SIGINT: stop supervising, leave the worker running.
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

backoff=$restart_delay
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
  if [ $((SECONDS - started)) -ge 10 ]; then backoff=$restart_delay; fi
  how=$(describe_exit "$rc" "$pid")
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
