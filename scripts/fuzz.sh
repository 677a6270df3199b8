#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzzer.cc) with clang, ASan and UBSan in
# build-fuzz/ and runs each for a bounded time: a smoke run of every decoder of outside bytes.
#
#   scripts/fuzz.sh                         every target, 30 s each
#   scripts/fuzz.sh --seconds 300 control_message keyed_snapshot
#   scripts/fuzz.sh --build-only            build targets and seeds, run nothing
#
# Limits: -rss_limit_mb=2048 and -malloc_limit_mb=512, so a decoder that allocates from an
# unchecked length field is a finding like a crash. Seeds come from build-fuzz/bin/fuzz_seeds
# (the real encoders); what the fuzzers find is kept in build-fuzz/corpus/<target>/ and reused
# by the next run. A crash is saved as build-fuzz/artifacts/<target>/crash-<sha1>; reproduce it
# with `build-fuzz/bin/<target> <file>`, then turn it into a regression test in the normal suite
# (tests/<module>/..._regression_test.cc) and fix the decoder. Exit status 1 if any target found
# something.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=30
build_only=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="${2:?--seconds needs a number}"; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) targets+=("${1%_fuzzer}_fuzzer"); shift ;;
  esac
done
case "$seconds" in
  ''|*[!0-9]*) echo "fuzz.sh: --seconds takes a whole number, not '$seconds'" >&2; exit 2 ;;
esac

all=()
for src in tests/fuzz/*_fuzzer.cc; do
  all+=("$(basename "$src" .cc)")
done
if [ ${#targets[@]} -eq 0 ]; then targets=("${all[@]}"); fi
for t in "${targets[@]}"; do
  if [ ! -f "tests/fuzz/$t.cc" ]; then
    echo "fuzz.sh: no fuzz target '$t'; the targets are: ${all[*]}" >&2
    exit 2
  fi
done

scripts/install-deps.sh

build=build-fuzz
sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
# -O1 -g without NDEBUG: DCHECKs stay on, so broken invariants surface as crashes too.
# Clang warns about a few things GCC does not; they stay warnings here (the GCC build is the
# one with -Werror that matters), and GCC-only flags (-Wno-restrict) are not an error.
warnings="-Wno-unknown-warning-option -Wno-error=unused-lambda-capture"
warnings+=" -Wno-error=unused-private-field"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$sanitize -fno-omit-frame-pointer $warnings" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DKEYFLOW_BUILD_TESTS=ON -DKEYFLOW_BUILD_BENCHMARKS=OFF -DKEYFLOW_BUILD_FUZZERS=ON >/dev/null
echo "fuzz.sh: building ${targets[*]} in $build/"
cmake --build "$build" --target "${targets[@]}" fuzz_seeds -j 2

rm -rf "$build/seeds"
"$build/bin/fuzz_seeds" "$build/seeds"
if [ "$build_only" -eq 1 ]; then exit 0; fi

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  log="$build/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$build/logs" "$build/seeds/$t"
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=25
        -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [ -f "tests/fuzz/$t.dict" ]; then args+=(-dict="tests/fuzz/$t.dict"); fi
  printf 'fuzz.sh: %-28s %ss ... ' "$t" "$seconds"
  if "$build/bin/$t" "${args[@]}" "$corpus" "$build/seeds/$t" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
    echo "ok (${runs:-?} runs, corpus $(ls "$corpus" | wc -l), peak rss ${rss:-?} MB)"
  else
    echo "FOUND SOMETHING (log: $log)"
    grep -E "^==[0-9]+==ERROR|runtime error|Check failed|CHECK|SUMMARY|Test unit written" "$log" \
      | head -n 8 | sed 's/^/    /'
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}: see $build/artifacts/<target>/" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets ran ${seconds}s each without findings"
