#!/usr/bin/env bash
# The checkpoint/recovery drill: proves exactly-once recovery from the outside,
# with real processes and SIGKILL.
#
#   scripts/drill-kill.sh [--workers N] [--kills K] [--events E] [--keys K] [--seed S]
#                         [--build-dir DIR] [--keep] [options]
#
# 1. Starts its own cluster (scripts/start-cluster.sh --respawn, a free port, a temporary run
#    dir): a coordinator and N workers, each worker supervised (a killed one comes back under
#    its slot).
# 2. Reference: runs count-window (event time) on generated input to completion without kills.
# 3. Drill: runs the same job on the same input, rate-limited so that it lasts long enough,
#    with --checkpoint-interval 1s, and SIGKILLs a random worker K times at random moments —
#    some of the kills hit the coordinator instead, which the drill restarts at once with the
#    same command line (same --checkpoint-dir and --port); the workers register again and the
#    job resumes from its latest completed checkpoint.
# 4. Waits for the job to finish and checks that its committed output (files not starting with
#    '.' or '_') equals the reference exactly, as sorted multisets of lines without "subtask".
# 5. Prints one row per kill and PASS or FAIL; exits 0 on PASS, 1 on FAIL, 2 on bad usage.
# Everything it started is stopped on exit (also on Ctrl-C or failure).
#
#   --workers N            workers = parallelism = generator splits (default 3)
#   --kills K              kills during the drill run (default 3)
#   --coordinator-kills C  how many of the K kills hit the coordinator (default: a third,
#                          at least one when K >= 2)
#   --stall-coordinator MS instead of killing the coordinator, stop it (SIGSTOP) for MS
#                          milliseconds and let it go on (SIGCONT): past the heartbeat timeout
#                          (default 1 s) the workers give up on it, cancel their subtasks and
#                          register again, and the job must fail over and still be exact
#                          (e.g. --stall-coordinator 1500 --coordinator-kills 2)
#   --events E             generated events (default 200000)
#   --keys K               distinct keys, Zipf-skewed (default 20000)
#   --rate R               events/s of the drill run (default: E spread over 8 s per kill + 12 s)
#   --seed S               seeds the generated input and the kill schedule (default: random,
#                          printed; the same seed gives the same input, victims and moments)
#   --count C, --timeout D count-window parameters (default 50 and 2s: hot keys close windows
#                          by count, cold keys by timeout)
#   --build-dir DIR        where the binaries are: DIR/bin/keyflow* (default build/ of the repo)
#   --run-dir DIR          run dir for logs, checkpoints and outputs (new or empty; kept
#                          afterwards; default a fresh temporary directory, removed after a PASS)
#   --coordinator-arg ARG  extra flag for keyflow-coordinator (repeatable), e.g.
#                          --coordinator-arg=--heartbeat-timeout=3s
#   --run-arg ARG          extra flag for the drill job's `keyflow run` (repeatable), e.g.
#                          --run-arg=--restart-strategy=fixed-delay
#   --keep                 keep the run dir after a PASS too (it is always kept after a FAIL)
#
# Columns of the table:
#   at        seconds since the drill job was submitted
#   victim    "worker <slot> (pid P)", "coordinator (pid P)" or "coordinator stalled MS ms (pid P)"
#   detect    kill -> the coordinator's "worker lost" / "job attempt failed" line (for the
#             coordinator: kill -> the restarted coordinator's "resuming it" line)
#   restore   detection -> "job running" of the next attempt (all subtasks deployed, started)
#   running   kill -> "job running" of the next attempt
#   processing kill -> "job processing again" of the next attempt (every subtask has restored
#             its state and processes records)
#   restored  the checkpoint the next attempt restored ("none": it started from scratch)
#   covered   records the restored checkpoint covers (sum of its source split positions, from
#             the workers' "source reading split=... from=offset N" lines)
#   replayed  records read twice because of the kill = (restore position of the killed attempt
#             + records it had read) - restore position of the next attempt. "Records it had
#             read" is the per-subtask maximum of records_in seen by polling `keyflow status`
#             (heartbeat metrics), so it is a lower bound: what was read after the last
#             heartbeat before the kill (and, for a coordinator kill, while it was down) is
#             not seen.
set -euo pipefail

KF_PROG=drill-kill
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

workers=3 kills=3 coordinator_kills="" events=200000 keys=20000 rate="" seed="" count=50
timeout=2s build_dir="$ROOT/build" run_dir="" keep=0 coordinator_args=() run_args=() stall_ms=0

need() { [ $# -ge 2 ] || { kf_log "$1 needs a value (try --help)"; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --workers) need "$@"; workers="$2"; shift 2 ;;
    --kills) need "$@"; kills="$2"; shift 2 ;;
    --coordinator-kills) need "$@"; coordinator_kills="$2"; shift 2 ;;
    --stall-coordinator) need "$@"; stall_ms="$2"; shift 2 ;;
    --events) need "$@"; events="$2"; shift 2 ;;
    --keys) need "$@"; keys="$2"; shift 2 ;;
    --rate) need "$@"; rate="$2"; shift 2 ;;
    --seed) need "$@"; seed="$2"; shift 2 ;;
    --count) need "$@"; count="$2"; shift 2 ;;
    --timeout) need "$@"; timeout="$2"; shift 2 ;;
    --build-dir) need "$@"; build_dir="$2"; shift 2 ;;
    --run-dir) need "$@"; run_dir="$2"; shift 2 ;;
    --coordinator-arg) need "$@"; coordinator_args+=("$2"); shift 2 ;;
    --run-arg) need "$@"; run_args+=("$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_log "unknown argument '$1' (try --help)"; exit 2 ;;
  esac
done

usage_error() { kf_log "$*"; exit 2; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_uint "$workers" && [ "$workers" -ge 1 ] || usage_error "--workers must be >= 1, got '$workers'"
is_uint "$kills" || usage_error "--kills must be >= 0, got '$kills'"
if [ -z "$coordinator_kills" ]; then
  coordinator_kills=$((kills / 3))
  [ "$kills" -ge 2 ] && [ "$coordinator_kills" -eq 0 ] && coordinator_kills=1
fi
is_uint "$coordinator_kills" && [ "$coordinator_kills" -le "$kills" ] ||
  usage_error "--coordinator-kills must be between 0 and --kills ($kills), got '$coordinator_kills'"
is_uint "$stall_ms" || usage_error "--stall-coordinator must be a number of milliseconds, got '$stall_ms'"
is_uint "$events" && [ "$events" -ge 1 ] || usage_error "--events must be >= 1, got '$events'"
is_uint "$keys" && [ "$keys" -ge "$workers" ] ||
  usage_error "--keys must be >= --workers ($workers): every split owns keys, got '$keys'"
is_uint "$count" && [ "$count" -ge 1 ] || usage_error "--count must be >= 1, got '$count'"
[ -n "$seed" ] || seed=$(( ($(date +%s%N) / 1000) % 1000000007 ))
is_uint "$seed" || usage_error "--seed must be a whole number, got '$seed'"
if [ -z "$rate" ]; then
  rate=$(( events / (8 * kills + 12) ))
  [ "$rate" -ge 1 ] || rate=1
fi
is_uint "$rate" && [ "$rate" -ge 1 ] || usage_error "--rate must be >= 1 event/s, got '$rate'"
command -v python3 >/dev/null || usage_error "python3 is required (it checks the results)"

build_dir="$(kf_abspath "$build_dir")"
for b in keyflow keyflow-coordinator keyflow-worker; do
  [ -x "$build_dir/bin/$b" ] || usage_error "$build_dir/bin/$b not found: build first (cmake -S" \
    "$ROOT -B $build_dir -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $build_dir)," \
    "or pass --build-dir"
done
own_run_dir=0
if [ -n "$run_dir" ]; then
  run_dir="$(kf_abspath "$run_dir")"
  mkdir -p "$run_dir"
  [ -z "$(ls -A "$run_dir")" ] || usage_error "--run-dir $run_dir is not empty"
else
  run_dir="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-drill-XXXXXX")"
  own_run_dir=1
fi

verdict=1 drill_pid=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -z "$drill_pid" ] || kill "$drill_pid" 2>/dev/null || true
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" --timeout 5 >/dev/null 2>&1 || true
  if [ "$verdict" -eq 0 ] && [ "$keep" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$own_run_dir" -eq 1 ]; then
    rm -rf "$run_dir"
  else
    kf_log "logs, checkpoints and outputs kept in $run_dir"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

kf_log "seed $seed; run dir $run_dir"
start_args=(--workers "$workers" --port 0 --run-dir "$run_dir" --build-dir "$build_dir" --respawn)
for a in ${coordinator_args[@]+"${coordinator_args[@]}"}; do start_args+=(--coordinator-arg "$a"); done
endpoint="$("$ROOT/scripts/start-cluster.sh" "${start_args[@]}")"
kf_use_cluster_keys "$run_dir"  # the drill's CLI calls use the cluster's client key

# The drill itself: submit, kill, restart, wait, analyse, compare. In the background so that a
# signal reaches the traps at once.
python3 - "$build_dir" "$run_dir" "$endpoint" "$workers" "$kills" "$coordinator_kills" \
  "$events" "$keys" "$rate" "$seed" "$count" "$timeout" "$stall_ms" \
  ${run_args[@]+"${run_args[@]}"} <<'PYTHON' &
import collections, datetime, json, os, random, re, signal, subprocess, sys, time

(build_dir, run_dir, endpoint, workers, kills, coordinator_kills, events, keys, rate, seed, count,
 timeout, stall_ms), run_args = sys.argv[1:14], sys.argv[14:]
stall_ms = int(stall_ms)
workers, kills, coordinator_kills = int(workers), int(kills), int(coordinator_kills)
events, keys, rate, seed = int(events), int(keys), int(rate), int(seed)
sys.stdout.reconfigure(line_buffering=True)  # the table and the verdict in order with the log
KEYFLOW = os.path.join(build_dir, "bin", "keyflow")
COORDINATOR_LOG = os.path.join(run_dir, "coordinator.log")
# Its stdout+stderr (start-cluster.sh: the "listening on" line; the log is --log-file).
COORDINATOR_OUT = os.path.join(run_dir, "coordinator.out")
POLL_S = 0.25
rng = random.Random(seed)


def log(msg):
    print(f"drill-kill: {msg}", file=sys.stderr, flush=True)


def now_ms():
    return int(time.time() * 1000)


def keyflow(*args, timeout_s=30):
    try:
        return subprocess.run([KEYFLOW, *args, "--coordinator", endpoint], capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None


def status():
    r = keyflow("status", "--json", timeout_s=15)
    if r is None or r.returncode != 0:
        return None
    try:
        job = json.loads(r.stdout).get("job")
    except ValueError:
        return None
    return job if isinstance(job, dict) else None


def read_pid(name):
    try:
        with open(os.path.join(run_dir, name + ".pid")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 0


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(what, predicate, timeout_s):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(POLL_S)  # polling period
    raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}")


def job_args(output, with_rate):
    spec = f"gen:events={events},keys={keys},splits={workers},seed={seed},skew=1"
    if with_rate:
        spec += f",rate={rate}"
    return ["run", "--job", "count-window", "--param", "time=event", "--param", f"count={count}",
            "--param", f"timeout={timeout}", "--input", spec, "--output", output,
            "--parallelism", str(workers), "--checkpoint-interval", "1s"]


# ---- coordinator restart ------------------------------------------------------------------
def listening_lines():
    try:
        with open(COORDINATOR_OUT, errors="replace") as f:
            return f.read().count("keyflow-coordinator: listening on ")
    except OSError:
        return 0


def restart_coordinator(argv):
    """Starts the coordinator again with the same command line (same --checkpoint-dir and the
    port it had bound), as a supervisor would, and waits for its "listening on" line."""
    for attempt in range(5):
        before = listening_lines()
        with open(COORDINATOR_OUT, "ab") as out:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                 start_new_session=True)
        with open(os.path.join(run_dir, "coordinator.pid"), "w") as f:
            f.write(f"{p.pid}\n")
        deadline = time.time() + 15
        while time.time() < deadline and p.poll() is None and listening_lines() <= before:
            time.sleep(0.05)
        if p.poll() is None and listening_lines() > before:
            return p.pid
        log(f"the restarted coordinator did not come up (try {attempt + 1}); retrying")
        if p.poll() is None:
            p.kill()
        p.wait()
        time.sleep(0.5)
    raise RuntimeError("could not restart the coordinator (see coordinator.out and coordinator.log)")


def coordinator_command(pid, port):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0") if a]
    # start-cluster.sh may have used --port 0: come back on the port that was bound.
    for i, a in enumerate(argv):
        if a == "--port" and i + 1 < len(argv):
            argv[i + 1] = port
        elif a.startswith("--port="):
            argv[i] = "--port=" + port
    return argv


# ---- 1. reference ---------------------------------------------------------------------------
reference_dir = os.path.join(run_dir, "reference")
output_dir = os.path.join(run_dir, "output")
log(f"reference run (no kills, no rate limit): {events} events, {keys} keys, {workers} splits")
t = time.time()
r = keyflow(*job_args(reference_dir, False), "--wait", timeout_s=600)
if r is None or r.returncode != 0:
    log("the reference run failed:\n" + ("" if r is None else r.stdout + r.stderr))
    sys.exit(1)
reference_job = status() or {}
log(f"reference finished in {time.time() - t:.1f} s")

# ---- 2. drill run with kills ----------------------------------------------------------------
expected_s = events / rate
schedule = []  # seconds after submission
window = 0.75 * expected_s / max(1, kills)
for i in range(kills):
    schedule.append(0.1 * expected_s + i * window + rng.uniform(0.1, 0.9) * window)
coordinator_victims = set(rng.sample(range(kills), coordinator_kills))
if kills and window < 4:
    log(f"warning: only {window:.1f} s between kills; recovery may not finish in between "
        "(lower --rate or --kills)")

log(f"drill run: rate {rate}/s (about {expected_s:.0f} s without failures), {kills} kill(s) "
    f"({coordinator_kills} of the coordinator)")
r = keyflow(*job_args(output_dir, True), *run_args)
if r is None or r.returncode != 0:
    log("could not submit the drill job:\n" + ("" if r is None else r.stdout + r.stderr))
    sys.exit(1)
job_id = r.stdout.strip().splitlines()[-1]
submitted = time.time()
port = endpoint.rsplit(":", 1)[1]

reads = collections.defaultdict(dict)  # attempt -> subtask -> max records_in seen
running_since = {}                     # attempt -> when first seen running
last = {}


def poll():
    global last
    job = status()
    if job is None or job.get("job_id") != job_id:
        return None
    last = job
    attempt, state = job.get("attempt", 0), job.get("state", "")
    if state in ("RUNNING", "FINISHING"):
        running_since.setdefault(attempt, time.time())
        # Skip the first heartbeat interval of an attempt: a heartbeat sent before a worker
        # processed its new deployment may still carry the previous attempt's numbers.
        if time.time() - running_since[attempt] >= 0.3:
            for s in job.get("subtasks", []):
                i, n = s.get("subtask", -1), s.get("records_in", 0)
                reads[attempt][i] = max(reads[attempt].get(i, 0), n)
    return job


kill_records = []
try:
    for i, at in enumerate(schedule):
        while True:
            job = poll()
            if job and job.get("state") in ("FINISHED", "FAILED", "CANCELED"):
                raise RuntimeError(f"the job ended ({job.get('state')}) before kill {i + 1}")
            if (job and job.get("state") == "RUNNING" and time.time() - submitted >= at and
                    time.time() - running_since.get(job.get("attempt"), time.time()) >= 0.5):
                break
            time.sleep(POLL_S)  # polling period
        attempt = last.get("attempt", 0)
        if i in coordinator_victims and stall_ms > 0:
            pid = read_pid("coordinator")
            t_kill = now_ms()
            os.kill(pid, signal.SIGSTOP)
            time.sleep(stall_ms / 1000)  # the stall itself, not a wait for a condition
            os.kill(pid, signal.SIGCONT)
            victim = f"coordinator stalled {stall_ms} ms (pid {pid})"
            log(f"kill {i + 1}: SIGSTOP {victim} at {t_kill / 1000 - submitted:.1f} s, then SIGCONT")
        elif i in coordinator_victims:
            pid = read_pid("coordinator")
            argv = coordinator_command(pid, port)
            t_kill = now_ms()
            os.kill(pid, signal.SIGKILL)
            wait_until(f"coordinator pid {pid} to die", lambda: not alive(pid), 10)
            new_pid = restart_coordinator(argv)
            victim = f"coordinator (pid {pid})"
            log(f"kill {i + 1}: SIGKILL {victim} at {t_kill / 1000 - submitted:.1f} s; "
                f"restarted it as pid {new_pid}")
        else:
            slot = rng.randrange(workers)
            pid = read_pid(f"worker-{slot}")
            t_kill = now_ms()
            os.kill(pid, signal.SIGKILL)
            victim = f"worker {slot} (pid {pid})"
            log(f"kill {i + 1}: SIGKILL {victim} at {t_kill / 1000 - submitted:.1f} s")
        kill_records.append({"at": t_kill, "victim": victim,
                             "coordinator": i in coordinator_victims and stall_ms == 0,
                             "stall": i in coordinator_victims and stall_ms > 0,
                             "slot": None if i in coordinator_victims else slot,
                             "attempt": attempt})

        def recovered():
            job = poll()
            return job and (job.get("attempt", 0) > attempt and
                            job.get("state") in ("RUNNING", "FINISHING", "FINISHED"))
        wait_until(f"the job to recover from kill {i + 1}", recovered, 120)

    def ended():
        job = poll()
        return job if job and job.get("state") in ("FINISHED", "FAILED", "CANCELED") else None
    final = wait_until("the drill job to end", ended, 3 * expected_s + 300)
except RuntimeError as e:
    log(f"FAIL: {e}")
    print("FAIL")
    sys.exit(1)

# ---- 3. analysis ----------------------------------------------------------------------------
def parse_time(line):
    stamp = line.split(" ", 1)[0]
    try:
        t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return None
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)


def log_lines(path):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                t = parse_time(line)
                if t is not None:
                    out.append((t, line.rstrip("\n")))
    except OSError:
        pass
    return out


coordinator_lines = log_lines(COORDINATOR_LOG)
# Restore position of every attempt: sum of the split offsets its sources started from.
start_offset = collections.defaultdict(int)
deployed = re.compile(r"subtask deployed job=(\S+) attempt=(\d+) ")
reading = re.compile(r"source reading split=.* from=offset (\d+)")
for w in range(workers):
    current = None
    for _, line in log_lines(os.path.join(run_dir, f"worker-{w}.log")):
        m = deployed.search(line)
        if m:
            current = int(m.group(2)) if m.group(1) == job_id else None
            continue
        m = reading.search(line)
        if m and current is not None:
            start_offset[current] += int(m.group(1))


def first_line_after(t, pattern):
    rx = re.compile(pattern)
    for lt, line in coordinator_lines:
        if lt >= t - 5 and rx.search(line):  # log stamps have ms resolution
            return lt, line
    return None, None


rows = []
for k in kill_records:
    t, a = k["at"], k["attempt"]
    if k["coordinator"]:
        detect_t, _ = first_line_after(t, rf"found job {re.escape(job_id)} .*resuming it")
    elif k.get("stall"):
        detect_t, _ = first_line_after(
            t, rf"worker lost worker=|job attempt failed job={re.escape(job_id)} attempt={a} ")
    else:
        detect_t, _ = first_line_after(
            t, rf"worker lost worker=\d+ slot={k['slot']} |job attempt failed job="
               rf"{re.escape(job_id)} attempt={a} ")
    run_t, run_line = first_line_after(t, rf"job running job={re.escape(job_id)} attempt=\d+ ")
    b = int(re.search(r"attempt=(\d+)", run_line).group(1)) if run_line else None
    processing_t, _ = first_line_after(
        t, rf"job processing again job={re.escape(job_id)} attempt={b} ") if b else (None, None)
    _, deploy_line = first_line_after(
        t, rf"job deploying job={re.escape(job_id)} attempt={b} ") if b else (None, None)
    restored = "?"
    if deploy_line:
        restored = os.path.basename(deploy_line.rsplit("restore=", 1)[1].strip())
    covered = start_offset.get(b) if b is not None else None
    read = sum(reads.get(a, {}).values())
    replayed = None
    if covered is not None and a in start_offset and reads.get(a):
        replayed = start_offset[a] + read - covered
    rows.append([f"{(t / 1000 - submitted):.1f}", k["victim"],
                 f"{detect_t - t}" if detect_t else "?",
                 f"{run_t - detect_t}" if run_t and detect_t else "?",
                 f"{run_t - t}" if run_t else "?",
                 f"{processing_t - t}" if processing_t else "?", restored,
                 "?" if covered is None else str(covered),
                 "?" if replayed is None else f">= {max(0, replayed)}"])

with open(os.path.join(run_dir, "drill-report.json"), "w") as f:
    json.dump({"job_id": job_id, "kills": kill_records, "rows": rows,
               "records_read_by_attempt": {a: sum(r.values()) for a, r in reads.items()},
               "restore_offset_by_attempt": dict(start_offset)}, f, indent=1)

header = ["at (s)", "victim", "detect (ms)", "restore (ms)", "running (ms)", "processing (ms)",
          "restored", "covered", "replayed"]
widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
print(f"job {job_id}: {final.get('state')} after {final.get('attempt')} attempt(s), "
      f"{events} events, {keys} keys, rate {rate}/s, seed {seed}")
for row in [header] + rows:
    print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())

# ---- 4. verdict -------------------------------------------------------------------------------
def result_lines(directory):
    lines = []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if name.startswith((".", "_")):
            continue
        with open(os.path.join(directory, name)) as f:
            for text in f:
                if text.strip():
                    j = json.loads(text)
                    j.pop("subtask", None)
                    lines.append(json.dumps(j, sort_keys=True))
    return sorted(lines)


problems = []
if final.get("state") != "FINISHED":
    problems.append(f"the job ended {final.get('state')}: {final.get('failure', '')}")
for name, job in (("reference", reference_job), ("drill", final)):
    if job.get("late_records", 0) != 0:
        problems.append(f"the {name} run saw {job.get('late_records')} late records: event time "
                        "would not be deterministic")
if len(kill_records) != kills:
    problems.append(f"only {len(kill_records)} of {kills} kills happened")
expected, actual = result_lines(reference_dir), result_lines(output_dir)
causes = collections.Counter(json.loads(x)["cause"] for x in expected)
print(f"reference: {len(expected)} windows ({', '.join(f'{n} by {c}' for c, n in sorted(causes.items()))}); "
      f"drill output: {len(actual)} windows")
if expected != actual:
    e, a = collections.Counter(expected), collections.Counter(actual)
    missing, extra = list((e - a).elements()), list((a - e).elements())
    problems.append(f"the output differs from the reference: {len(missing)} window(s) missing, "
                    f"{len(extra)} unexpected")
    for x in missing[:5]:
        print(f"  missing:    {x}")
    for x in extra[:5]:
        print(f"  unexpected: {x}")
for p in problems:
    print(f"  problem: {p}")
print("PASS" if not problems else "FAIL")
sys.exit(0 if not problems else 1)
PYTHON
drill_pid=$!
rc=0
wait "$drill_pid" || rc=$?
drill_pid=""
[ "$rc" -ne 0 ] || verdict=0
exit "$rc"
