#!/usr/bin/env python3
"""Helpers of scripts/drill-rescale.sh and scripts/bench-rescale.sh (not a user command).

  rescale_check.py await-rescale --keyflow BIN --endpoint E --old-attempt A --target P
                                 --t0-ms T [--run-dir DIR] [--timeout S] [--need-processing]
                                 [--checkpoint-dir DIR]
      After `scripts/rescale.sh P` returned: polls `keyflow status --json` until the job runs
      a newer attempt at P with every subtask's restore_bytes equal to the bytes of the key
      groups it owns in the savepoint it restored from (read with `keyflow checkpoint inspect
      DIR --json`, ranges by Flink's formula), and (with --need-processing) records flowing
      again. Prints one JSON object: savepoint, moved key groups, expected/actual bytes per
      subtask, the worker logs' "state restored" bytes_read and ms, processing_ms (from T to
      the first status showing all of that). Exit 0 if everything matched, 1 otherwise.

  rescale_check.py compare-outputs REFERENCE_DIR OUTPUT_DIR
      Compares the committed results of two file-sink outputs (files not starting with '.' or
      '_') as sorted multisets of lines without the "subtask" field. Exit 0 if equal.

  rescale_check.py table STEPS_JSONL
      Prints the per-step table of the drill from the await-rescale results (one per line).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time


def key_group_range(max_p, p, i):
    """Flink's KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex (inclusive)."""
    start = (i * max_p + p - 1) // p
    end = ((i + 1) * max_p - 1) // p
    return start, end


def run_json(argv, timeout=30):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s exited with %d: %s" % (" ".join(argv), r.returncode,
                                                       r.stderr.strip()))
    return json.loads(r.stdout)


def expected_restore(inspect, new_p):
    """Per new subtask: the bytes of the key groups it owns; and the number of key groups whose
    owner index changes."""
    max_p = inspect["max_parallelism"]
    length = {}
    old_owner = {}
    for st in inspect["subtasks"]:
        for g in st["key_groups"]:
            length[g["key_group"]] = g["bytes"]
            old_owner[g["key_group"]] = st["subtask"]
    if sorted(length) != list(range(max_p)):
        raise RuntimeError("the savepoint does not cover key groups 0..%d exactly once" %
                           (max_p - 1))
    expected = []
    moved = 0
    for i in range(new_p):
        start, end = key_group_range(max_p, new_p, i)
        expected.append(sum(length[g] for g in range(start, end + 1)))
        moved += sum(1 for g in range(start, end + 1) if old_owner[g] != i)
    return expected, moved


RESTORED_RE = re.compile(r"state restored subtask=(\d+) checkpoint=(\d+) files=(\d+) "
                         r"(?:shared_files=\d+ native=\d+ )?"
                         r"bytes_read=(\d+) keys=(\d+) timers=(\d+) ms=(\d+)")


def restore_log_lines(run_dir, savepoint_id, new_p):
    """subtask -> {bytes, keys, timers, ms, files} from the workers' "state restored" lines of
    this savepoint (subtask i runs on the worker of slot i)."""
    found = {}
    if not run_dir:
        return found
    for i in range(new_p):
        path = os.path.join(run_dir, "worker-%d.log" % i)
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        for m in RESTORED_RE.finditer(text):
            if int(m.group(1)) == i and int(m.group(2)) == savepoint_id:
                found[i] = {"files": int(m.group(3)), "bytes": int(m.group(4)),
                            "keys": int(m.group(5)), "timers": int(m.group(6)),
                            "ms": int(m.group(7))}
    return found


def await_rescale(a):
    kf = [a.keyflow]
    ep = ["--coordinator", a.endpoint]
    deadline = time.time() + a.timeout
    result = {"ok": False, "to_p": a.target, "old_attempt": a.old_attempt}
    expected = None
    last = None
    while True:
        now_ms = int(time.time() * 1000)
        try:
            st = run_json(kf + ["status", "--json"] + ep)
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            st, last = None, str(e)
        job = (st or {}).get("job") or {}
        if job:
            last = {k: job.get(k) for k in ("state", "attempt", "parallelism", "restored_from",
                                            "records_processed")}
            last["restore_bytes"] = [s.get("restore_bytes") for s in job.get("subtasks", [])]
        if job.get("state") in ("FINISHED", "FAILED", "CANCELED"):
            result["error"] = "the job is %s (%s) instead of running at %d" % (
                job.get("state"), job.get("failure", ""), a.target)
            break
        if (job.get("state") == "RUNNING" and job.get("attempt", 0) > a.old_attempt and
                job.get("parallelism") == a.target and job.get("restored_from", 0) > 0):
            if expected is None:
                sp = job["restored_from"]
                if a.checkpoint_dir:
                    dirs = [a.checkpoint_dir]
                else:
                    cps = run_json(kf + ["checkpoints", "--json"] + ep)
                    dirs = [c["directory"] for c in cps.get("completed", [])
                            if c.get("id") == sp]
                if not dirs:
                    result["error"] = "checkpoint %d the job restored from is not listed" % sp
                    break
                inspect = run_json(kf + ["checkpoint", "inspect", dirs[0], "--json"])
                expected, moved = expected_restore(inspect, a.target)
                result.update({"savepoint": sp, "savepoint_dir": dirs[0],
                               "savepoint_type": inspect.get("type"),
                               "from_p": inspect["parallelism"],
                               "max_parallelism": inspect["max_parallelism"],
                               "state_bytes": sum(expected), "keys": inspect["totals"]["keys"],
                               "timers": inspect["totals"]["timers"], "moved": moved,
                               "expected": expected})
            actual = [s.get("restore_bytes", 0) for s in job.get("subtasks", [])]
            result["actual"] = actual
            # The new attempt's own counters: the job's add up every attempt.
            current = job.get("current_attempt") or {}
            processing = current.get("records_processed", 0) > 0 or not a.need_processing
            if actual == expected and processing:
                result["processing_ms"] = now_ms - a.t0_ms
                break
        if time.time() > deadline:
            result["error"] = "timed out after %d s; last status: %s" % (a.timeout, last)
            break
        time.sleep(0.1)  # polling period
    if expected is not None:
        logs = restore_log_lines(a.run_dir, result["savepoint"], a.target)
        result["log_bytes"] = [logs.get(i, {}).get("bytes") for i in range(a.target)]
        result["log_ms"] = [logs.get(i, {}).get("ms") for i in range(a.target)]
        log_ok = not a.run_dir or result["log_bytes"] == expected
        if "error" not in result and not log_ok:
            result["error"] = "worker logs say bytes_read=%s, expected %s" % (
                result["log_bytes"], expected)
        result["ok"] = "error" not in result and result.get("actual") == expected and log_ok
    print(json.dumps(result))
    return 0 if result["ok"] else 1


def canonical_lines(directory):
    lines = []
    for name in sorted(os.listdir(directory)):
        if name.startswith(".") or name.startswith("_"):
            continue
        with open(os.path.join(directory, name)) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    j = json.loads(line)
                except ValueError:
                    raise RuntimeError("%s/%s line %d is not JSON: %r" % (directory, name, n,
                                                                          line[:200]))
                j.pop("subtask", None)
                lines.append(json.dumps(j, sort_keys=True, separators=(",", ":")))
    lines.sort()
    return lines


def compare_outputs(a):
    ref = canonical_lines(a.reference)
    out = canonical_lines(a.output)
    if ref == out:
        print("identical: %d lines" % len(ref))
        return 0
    from collections import Counter
    cr, co = Counter(ref), Counter(out)
    missing = list((cr - co).elements())
    extra = list((co - cr).elements())
    print("DIFFERENT: reference %d lines, output %d lines; %d missing, %d unexpected" %
          (len(ref), len(out), len(missing), len(extra)))
    for line in missing[:5]:
        print("  missing:    " + line)
    for line in extra[:5]:
        print("  unexpected: " + line)
    return 1


def human_bytes(n):
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def table(a):
    rows = []
    with open(a.steps) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    print("%-5s %-8s %-10s %-21s %-9s %-12s %-11s %-9s %s" % (
        "step", "P -> P'", "savepoint", "keys/timers in it", "kg moved", "deployed ms",
        "process ms", "result", "bytes read per new subtask (expected)"))
    for n, r in enumerate(rows, 1):
        per = ", ".join("%d: %s (%s)" % (i, act, exp) for i, (act, exp) in enumerate(
            zip(r.get("actual") or [], r.get("expected") or [])))
        print("%-5d %-8s %-10s %-21s %-9s %-12s %-11s %-9s %s" % (
            n, "%s -> %s" % (r.get("from_p", "?"), r.get("to_p", "?")), r.get("savepoint", "?"),
            "%s/%s" % (r.get("keys", "?"), r.get("timers", "?")), r.get("moved", "?"),
            r.get("deployed_ms", "?"), r.get("processing_ms", "?"),
            "ok" if r.get("ok") else "MISMATCH", per))
        if r.get("error"):
            print("      error: " + r["error"])
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("await-rescale")
    w.add_argument("--keyflow", required=True)
    w.add_argument("--endpoint", required=True)
    w.add_argument("--old-attempt", type=int, required=True)
    w.add_argument("--target", type=int, required=True)
    w.add_argument("--t0-ms", type=int, required=True)
    w.add_argument("--run-dir", default="")
    w.add_argument("--timeout", type=float, default=60)
    w.add_argument("--need-processing", action="store_true")
    w.add_argument("--checkpoint-dir", default="",
                   help="the checkpoint restored from (default: found by id in the job's list)")
    c = sub.add_parser("compare-outputs")
    c.add_argument("reference")
    c.add_argument("output")
    t = sub.add_parser("table")
    t.add_argument("steps")
    a = p.parse_args()
    try:
        if a.cmd == "await-rescale":
            return await_rescale(a)
        if a.cmd == "compare-outputs":
            return compare_outputs(a)
        return table(a)
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        print("rescale_check.py %s: %s" % (a.cmd, e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
