#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs every check CI runs, in this
# order, stopping at the first failure:
#   1. scripts/format.sh --check        (clang-format; no diff allowed)
#   2. thread-safety analysis           clang -Wthread-safety -Werror, module libraries only,
#                                       build-tsa/ (compile only: nothing is linked or run)
#   3. the plain suite                  Release build in build/, ctest
#   4. the ASan+UBSan suite             RelWithDebInfo build in build-asan/, ctest
#   5. the TSan suite                   build-tsan/: only the unit-test binaries of the
#                                       threaded modules (labels common|state|worker|checkpoint);
#                                       no integration, coordinator or benchmark targets, nor
#                                       the single-threaded Nexmark library tests
# `.ci/run` runs exactly this (see the README for the measured time of each stage).
#
#   scripts/test.sh                      all of the above
#   scripts/test.sh --plain              only the plain suite (the quick local loop)
#   scripts/test.sh --sanitize address   only the ASan+UBSan suite (build-asan/)
#   scripts/test.sh --sanitize thread    only the TSan suite (build-tsan/)
#   scripts/test.sh --thread-safety      only the clang thread-safety analysis (build-tsa/)
#   extra arguments after -- go to ctest (e.g. -- -R Timer)
set -euo pipefail
cd "$(dirname "$0")/.."

modes=()
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --plain) modes=(plain); shift ;;
    --thread-safety) modes=(analysis); shift ;;
    --sanitize)
      case "${2:-}" in
        address | thread) modes=("$2"); shift 2 ;;
        *) echo "test.sh: --sanitize takes address or thread, not '${2:-}'" >&2; exit 2 ;;
      esac
      ;;
    --) shift; ctest_args+=("$@"); break ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
all=0
if [ ${#modes[@]} -eq 0 ]; then
  modes=(analysis plain address thread)
  all=1
fi

scripts/install-deps.sh

if [ "$all" -eq 1 ]; then
  echo "test.sh: checking the formatting (scripts/format.sh --check)"
  scripts/format.sh --check
fi

jobs=$(nproc)
# ccache (installed by install-deps.sh) makes a rebuild of an unchanged file a cache hit: a CI run
# on a machine that built keyflow before spends its time on tests, not on recompiling. A cold
# cache costs nothing extra. KEYFLOW_NO_CCACHE=1 turns it off.
launcher=()
if [ -z "${KEYFLOW_NO_CCACHE:-}" ] && command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so two clones at different paths share cache entries.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
fi
# Sanitizer reports come with full stacks (the caller's settings win). UBSan stops at the first
# report (-fno-sanitize-recover); TSan reports every race and fails the test at exit. TSan
# suppressions for the uninstrumented libzmq are compiled in (common/transport/zmq_context.cc).
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-second_deadlock_stack=1 suppressions=$PWD/tests/tsan-suppressions.txt}"

# TSan runs the unit tests of the modules with threads (mailbox, tasks, transport, async
# snapshots, checkpoint storage); the coordinator is single-threaded and the integration tests
# are processes (covered by the plain and ASan suites), so they are neither built nor run.
tsan_labels='common|state|worker|checkpoint'
# ...except the tests of the Nexmark job library (its generator, source and queries): one thread
# computing up to a million events, nothing for TSan to check, and under TSan they were 40 % of
# this stage's test time (54 s for one of them); the plain and ASan suites run them.
tsan_exclude='^Nexmark(Generator|Queries|Config|Source)Test[.]'

# Clang's thread-safety analysis over the module libraries (every mutex-protected member is
# ABSL_GUARDED_BY: common/mutex.h). -O0: the analysis runs in the front end, codegen is cheap.
run_analysis() {
  echo "test.sh: clang -Wthread-safety over the module libraries in build-tsa/"
  CXX=clang++ cmake -S . -B build-tsa -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
    -DKEYFLOW_THREAD_SAFETY_ANALYSIS=ON -DKEYFLOW_BUILD_TESTS=OFF -DKEYFLOW_BUILD_BENCHMARKS=OFF \
    "${launcher[@]}" >/dev/null
  cmake --build build-tsa -j "$jobs" --target keyflow_base keyflow_common keyflow_logging \
    keyflow_protocol keyflow_process keyflow_security keyflow_transport keyflow_kafka \
    keyflow_job_library keyflow_state keyflow_checkpoint \
    keyflow_worker keyflow_coordinator
}

run_suite() {
  local mode=$1 build type sanitize="" extra=() targets=()
  case "$mode" in
    plain) build=build; type=Release ;;
    address) build=build-asan; type=RelWithDebInfo; sanitize=address ;;
    thread) build=build-tsan; type=RelWithDebInfo; sanitize=thread ;;
  esac
  # GCC 12 with -fsanitize=... reports -Wmaybe-uninitialized false positives inside libstdc++
  # (<regex>'s std::function states, seen in tests/worker/operators) that -Werror turns into
  # build failures; the sanitizer builds drop that one warning, the plain build keeps it.
  # Benchmarks are built (not run) by the plain build only, so they keep compiling.
  # Sanitizer builds compile with -O1 -g1 (line tables: stacks keep file:line): half the
  # compile time of -O2 -g, which kept CI near 26 minutes on 2 cores.
  if [ -n "$sanitize" ]; then
    extra=(-DCMAKE_CXX_FLAGS=-Wno-maybe-uninitialized -DKEYFLOW_BUILD_BENCHMARKS=OFF
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
  else
    extra=(-DKEYFLOW_BUILD_BENCHMARKS=ON)
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DKEYFLOW_SANITIZE="$sanitize" \
    "${extra[@]}" "${launcher[@]}" >/dev/null
  local labels=()
  if [ "$mode" = thread ]; then
    # Only the test binaries of the labelled folders (tests/<module>/...) and what they link.
    mapfile -t targets < <(ninja -C "$build" -t targets all |
      sed -nE "s/^((${tsan_labels})[a-z_]*_tests): phony$/\1/p")
    targets=(--target "${targets[@]}")
    labels=(-L "$tsan_labels" -E "$tsan_exclude")
  fi
  echo "test.sh: building in $build/ ($type${sanitize:+, sanitize=$sanitize})"
  cmake --build "$build" -j "$jobs" "${targets[@]}"
  echo "test.sh: running the $mode suite in $build/"
  (cd "$build" && ctest --output-on-failure -j "$jobs" --timeout 600 "${labels[@]}" \
    "${ctest_args[@]}")
}

start=$SECONDS
for mode in "${modes[@]}"; do
  suite_start=$SECONDS
  if [ "$mode" = analysis ]; then run_analysis; else run_suite "$mode"; fi
  echo "test.sh: $mode suite passed in $((SECONDS - suite_start)) s"
done
echo "test.sh: all passed (${modes[*]}) in $((SECONDS - start)) s"
