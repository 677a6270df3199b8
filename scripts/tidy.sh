#!/usr/bin/env bash
# Runs clang-tidy (checks in the root .clang-tidy) over keyflow's sources with the compile
# database of the plain build, build/compile_commands.json (configured here if missing).
#
#   scripts/tidy.sh               every .cc of the compile database (modules and tests)
#   scripts/tidy.sh FILE...       only these files
#   scripts/tidy.sh --jobs N      parallel clang-tidy processes (default 2)
#   KEYFLOW_TIDY_BUILD=build-x scripts/tidy.sh   use another build directory's database
#
# Prints the findings and a count per check; exits 1 if there are any. The full output is kept
# in <build>/tidy.log. Headers are checked through the files that include them.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=2
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "tidy.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done

# shellcheck source=lib/find-tool.sh
source scripts/lib/find-tool.sh
clang_tidy="$(kf_find_tool tidy.sh clang-tidy clang-tidy-14)"

build="${KEYFLOW_TIDY_BUILD:-build}"
db="$build/compile_commands.json"
# (Re)configuring refreshes the database, so files added since the last build are included.
if [ -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" >/dev/null
else
  echo "tidy.sh: configuring $build/"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi

if [ ${#files[@]} -eq 0 ]; then
  root=$(pwd)
  mapfile -t files < <(python3 - "$db" "$root" <<'PY'
import json, os, sys
db, root = sys.argv[1], sys.argv[2]
seen = set()
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    if rel.startswith("..") or rel.split(os.sep)[0].startswith("build"):
        continue
    if rel not in seen and os.path.exists(path):
        seen.add(rel)
        print(rel)
PY
  )
fi

log="$build/tidy.log"
echo "tidy.sh: clang-tidy on ${#files[@]} files, $jobs at a time (log: $log)"
# GCC-only warning flags in the database (-Wno-restrict) are unknown to clang: not a finding.
printf '%s\0' "${files[@]}" |
  xargs -0 -n 1 -P "$jobs" "$clang_tidy" -p "$build" --quiet \
    --extra-arg=-Wno-unknown-warning-option >"$log" 2>/dev/null || true

# One finding per "file:line:col: warning: ... [check]" line, de-duplicated (a header included
# by several files reports the same finding several times).
findings=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error): .*\[[a-z0-9.,-]+\]$' "$log" |
           sed "s|^$(pwd)/||" | sort -u || true)
if [ -z "$findings" ]; then
  echo "tidy.sh: no findings"
  exit 0
fi
echo "$findings"
echo
echo "tidy.sh: $(echo "$findings" | wc -l) findings by check:"
echo "$findings" | sed -E 's/.*\[([a-z0-9.,-]+)\]$/\1/' | sort | uniq -c | sort -rn
exit 1
