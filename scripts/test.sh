#!/usr/bin/env bash
# The README's test command: installs what is missing, configures (Release), builds and runs
# the whole test suite with ctest. `.ci/run` runs exactly this.
#
#   scripts/test.sh                      plain Release build in build/
#   scripts/test.sh --sanitize address   ASan+UBSan build in build-asan/
#   scripts/test.sh --sanitize thread    TSan build in build-tsan/
#   extra arguments after -- go to ctest (e.g. -- -R Timer)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize="${2:?--sanitize needs address or thread}"; shift 2 ;;
    --) shift; ctest_args+=("$@"); break ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh

case "$sanitize" in
  "") build=build; type=Release ;;
  address) build=build-asan; type=RelWithDebInfo ;;
  thread) build=build-tsan; type=RelWithDebInfo ;;
  *) echo "test.sh: --sanitize takes address or thread, not '$sanitize'" >&2; exit 2 ;;
esac

jobs=$(nproc)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DKEYFLOW_SANITIZE="$sanitize" \
  -DKEYFLOW_BUILD_BENCHMARKS=$([ -z "$sanitize" ] && echo ON || echo OFF) >/dev/null
echo "test.sh: building in $build/ ($type${sanitize:+, sanitize=$sanitize})"
cmake --build "$build" -j "$jobs"
echo "test.sh: running tests"
cd "$build"
ctest --output-on-failure -j "$jobs" --timeout 600 "${ctest_args[@]}"
