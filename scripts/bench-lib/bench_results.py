#!/usr/bin/env python3
"""Helpers of scripts/bench.sh: pull numbers out of Google Benchmark and keyflow JSON, and print
the results table.

  bench_results.py bench FILE NAME FIELD         a field of one benchmark in a
                                                 --benchmark_out JSON file; NAME is its name
                                                 or a prefix up to a '/' (BM_X matches
                                                 BM_X/iterations:5, BM_Y/1000000 matches
                                                 BM_Y/1000000/iterations:20000000)
  bench_results.py job FILE FIELD                a field of "job" in `keyflow status --json`
  bench_results.py checkpoints [--logs DIR] FILE...
                                                 the completed checkpoints (not savepoints) in
                                                 the history of `keyflow checkpoints --json`
                                                 files, one line: the number taken while the job
                                                 held state, the median and max of their
                                                 sync_us, async_us, duration_ms and bytes, then
                                                 the number taken after the end of input and
                                                 their max sync_us (see below)
  bench_results.py incremental [--logs DIR] FILE of `keyflow checkpoints --json`: the steady
                                                 state of incremental checkpoints, one line: the
                                                 number of checkpoints counted, the median of
                                                 their written_bytes ("-" if the history has none),
                                                 of their bytes (full state size), and the median
                                                 and max of duration_ms (see below); "-" for
                                                 each when there is no such checkpoint
  bench_results.py state-sample                  of `keyflow status --json` on stdin: one
                                                 line, the state bytes on disk and in memory
                                                 summed over the job's subtasks; nothing when
                                                 stdin holds no status (the CLI failed: the
                                                 sample is skipped)
  bench_results.py latency-sample                of `keyflow status --json` on stdin: one
                                                 line, the slowest subtask's latency p50 and
                                                 p99 (ms) while the job runs and every subtask
                                                 has them; nothing otherwise
  bench_results.py table FILE                    the markdown table of the rows in FILE

Checkpoints after the end of input (once every timer had fired: empty state; their synchronous
part is dominated by the file sink flushing the job's last output, which is not the steady-state
pause) are told apart by size: a file's checkpoint whose state is under 1 % of the largest in
that file. The size does not tell RocksDB's apart (its SST files keep the deleted state until a
compaction), so with --logs DIR (the cluster's run dir) a checkpoint also has to be triggered
(DIR/coordinator*.log) before the job's first "source finished" in a worker log
(DIR/worker-*.log, between the job's "job deploying" and "job finished"): a source sends its
end-of-input watermark, which fires every window, right before it finishes, so the barrier of a
checkpoint triggered later reaches the keyed subtasks after that watermark. (An unthrottled
source can finish long before the keyed subtasks have processed its records: their checkpoints
after that moment count as after the end of input too.)

`incremental` counts the completed checkpoints (not savepoints) taken while the job held state
(as above) and keeps the second half of them by id: the first ones cover the workload's first
pass over every key.

Rows (FILE of `table`) are tab-separated: section, metric, value, unit, target ("" or
">= X" / "<= X"), load averages (space separated; shown as a range), note. A value of "" means
not measured.
Exit status 1 with a message on stderr when a value is missing.
"""
import glob
import json
import os
import re
import statistics
import sys


def die(msg):
    print(f"bench_results: {msg}", file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read {path}: {e}")


def cmd_bench(path, name, field):
    for b in load(path).get("benchmarks", []):
        full = b.get("name", "")
        if b.get("run_type") == "aggregate":
            continue
        if full == name or full.startswith(name + "/"):
            if b.get("error_occurred"):
                die(f"{name} in {path} failed: {b.get('error_message')}")
            if field not in b:
                die(f"{name} in {path} has no field {field}")
            print(b[field])
            return
    die(f"no benchmark {name} in {path}")


def cmd_job(path, field):
    job = load(path).get("job")
    if not isinstance(job, dict) or field not in job:
        die(f"no job.{field} in {path}")
    print(job[field])


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) ")


def log_lines(run_dir, pattern):
    """(timestamp, line) of the lines of the logs matching the glob pattern in run_dir; ISO
    UTC timestamps of one clock compare as strings."""
    out = []
    for path in glob.glob(os.path.join(run_dir, pattern)):
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    m = LOG_TIME.match(line)
                    if m:
                        out.append((m.group(1), line))
        except OSError:
            pass
    return out


def held_state_ids(run_dir, job_id):
    """Ids of the checkpoints of job_id triggered before its first source finished (see the
    file comment); None when the logs do not tell."""
    tag = f" job={job_id} "
    coordinator = [(t, line) for t, line in log_lines(run_dir, "coordinator*.log") if tag in line]
    deployed = [t for t, line in coordinator if " job deploying " in line]
    finished = [t for t, line in coordinator if " job finished " in line]
    triggered = {}
    for t, line in coordinator:
        m = re.search(r" checkpoint triggered .* id=(\d+) ", line)
        if m:
            triggered[int(m.group(1))] = t
    if not deployed or not finished:
        return None
    ends = [t for t, line in log_lines(run_dir, "worker-*.log")
            if " source finished " in line and deployed[0] <= t <= finished[-1]]
    if not ends:
        return None
    return {i for i, t in triggered.items() if t < min(ends)}


def split_history(path, logs):
    """The completed checkpoints (not savepoints) of a `keyflow checkpoints --json` file, by id:
    (taken while the job held state, taken after the end of input)."""
    data = load(path)
    history = sorted((h for h in data.get("history", [])
                      if h.get("state") == "COMPLETED" and not h.get("savepoint")),
                     key=lambda h: h.get("id", 0))
    largest = max((h.get("bytes", 0) for h in history), default=0)
    held = {h.get("id") for h in history if h.get("bytes", 0) >= largest / 100}
    before_end = held_state_ids(logs, data.get("job_id", "")) if logs else None
    if before_end is not None:
        held &= before_end
    return ([h for h in history if h.get("id") in held],
            [h for h in history if h.get("id") not in held])


def logs_option(args):
    """--logs DIR at the front of args: (DIR or None, the other args)."""
    if len(args) >= 2 and args[0] == "--logs":
        return args[1], args[2:]
    return None, args


def cmd_checkpoints(*args):
    logs, paths = logs_option(list(args))
    if not paths:
        die("checkpoints needs at least one file")
    during, after = [], []
    for p in paths:
        held, ended = split_history(p, logs)
        during += held
        after += ended
    out = [len(during)]
    for field in ("sync_us", "async_us", "duration_ms", "bytes"):
        values = [h.get(field, 0) for h in during] or [0]
        out += [statistics.median(values), max(values)]
    out += [len(after), max((h.get("sync_us", 0) for h in after), default=0)]
    print(" ".join(str(v) for v in out))


def cmd_incremental(*args):
    logs, paths = logs_option(list(args))
    if len(paths) != 1:
        die("incremental needs one file")
    during, _ = split_history(paths[0], logs)
    steady = during[len(during) // 2:]
    if not steady:
        print("0 - - - -")
        return
    written = [h["written_bytes"] for h in steady if "written_bytes" in h]
    med = lambda vs: statistics.median(vs) if vs else "-"
    print(len(steady), med(written), med([h.get("bytes", 0) for h in steady]),
          med([h.get("duration_ms", 0) for h in steady]),
          max(h.get("duration_ms", 0) for h in steady))


def read_status():
    """`keyflow status --json` from stdin; None when it is empty or not JSON (the CLI failed)."""
    try:
        status = json.load(sys.stdin)
    except ValueError:
        return None
    return status if isinstance(status, dict) else None


def cmd_state_sample():
    status = read_status()
    if status is None:
        return
    subs = (status.get("job") or {}).get("subtasks") or []
    print(sum(s.get("state_bytes_disk", 0) for s in subs),
          sum(s.get("state_bytes_memory", 0) for s in subs))


def cmd_latency_sample():
    job = (read_status() or {}).get("job") or {}
    subs = job.get("subtasks") or []
    if job.get("state") == "RUNNING" and subs and all(
            (s.get("latency") or {}).get("p99_ms") is not None for s in subs):
        print(max(s["latency"]["p50_ms"] for s in subs),
              max(s["latency"]["p99_ms"] for s in subs))


def fmt(value, unit):
    if value == "":
        return "not measured"
    v = float(value)
    if v != 0 and abs(v) < 0.1:
        s = f"{v:.2g}"
    elif abs(v) >= 100 or v == int(v):
        s = f"{v:,.0f}"
    elif abs(v) >= 10:
        s = f"{v:.1f}"
    else:
        s = f"{v:.2f}"
    return f"{s} {unit}".strip()


def verdict(value, target):
    if value == "" or not target:
        return ""
    op, bound = target.split()
    v, b = float(value), float(bound)
    if (v >= b) if op == ">=" else (v <= b):
        return "met"
    if op == ">=":
        return f"missed ({v / b * 100:.0f} % of it)" if b else "missed"
    return f"missed: {v / b:.1f}x the limit" if b else "missed"


def load_range(loads):
    values = sorted(float(x) for x in loads.split())
    if not values:
        return ""
    if values[0] == values[-1]:
        return f"{values[0]:.2f}"
    return f"{values[0]:.2f}–{values[-1]:.2f}"


def cmd_table(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                rows.append((line.split("\t") + [""] * 7)[:7])
    print("| area | metric | measured | target | verdict | load avg (1 min) | notes |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for section, metric, value, unit, target, loadavg, note in rows:
        target_text = ""
        if target:
            op, bound = target.split()
            target_text = f"{op.replace('>=', '≥').replace('<=', '≤')} {fmt(bound, unit)}"
        print(f"| {section} | {metric} | {fmt(value, unit)} | {target_text} | "
              f"{verdict(value, target)} | {load_range(loadavg)} | {note} |")


def main(argv):
    if len(argv) < 2:
        die("usage: see the file comment")
    cmd, args = argv[1], argv[2:]
    if cmd == "bench" and len(args) == 3:
        cmd_bench(*args)
    elif cmd == "job" and len(args) == 2:
        cmd_job(*args)
    elif cmd == "checkpoints" and args:
        cmd_checkpoints(*args)
    elif cmd == "incremental" and args:
        cmd_incremental(*args)
    elif cmd == "state-sample" and not args:
        cmd_state_sample()
    elif cmd == "latency-sample" and not args:
        cmd_latency_sample()
    elif cmd == "table" and len(args) == 1:
        cmd_table(*args)
    else:
        die(f"bad command line: {' '.join(argv[1:])}")


if __name__ == "__main__":
    main(sys.argv)
