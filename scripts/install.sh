#!/usr/bin/env bash
# Installs keyflow — the binaries, the built-in job library and the job SDK (headers,
# libkeyflow_sdk.a, the CMake package with keyflow_add_job) — into PREFIX:
#   1. installs the Debian packages keyflow needs (scripts/install-deps.sh),
#   2. configures and builds keyflow in Release (build/ of the repository, or --build-dir),
#   3. `cmake --install BUILD --prefix PREFIX`,
#   4. prints how to start a cluster (bin/keyflow-start-cluster, the installed
#      scripts/start-cluster.sh) and how to build your own job against PREFIX.
#
#   scripts/install.sh [--build-dir DIR] [--no-deps] PREFIX
#
#   PREFIX           where to install, e.g. /opt/keyflow or $HOME/.local (created if missing)
#   --build-dir DIR  the build directory (default build/ of the repository)
#   --no-deps        do not run scripts/install-deps.sh (the packages are already there)
#
# Layout under PREFIX: bin/keyflow, bin/keyflow-coordinator, bin/keyflow-worker,
# bin/keyflow-start-cluster and bin/keyflow-stop-cluster (links to share/keyflow/scripts/),
# lib/keyflow/jobs/ (the built-in job library), lib/keyflow/examples/ and share/keyflow/examples/
# (the example job libraries and their sources), include/keyflow/ (the SDK headers),
# lib/libkeyflow_sdk.a and lib/cmake/keyflow/ (find_package(keyflow)). KEYFLOW_JOBS sets the
# build's -j (default nproc).
set -euo pipefail

KF_PROG=install
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

prefix="" build_dir="$ROOT/build" deps=1
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --build-dir) kf_need "$@"; build_dir="$2"; shift 2 ;;
    --no-deps) deps=0; shift ;;
    -h | --help) kf_usage; exit 0 ;;
    -*) kf_die "unknown argument '$1' (try --help)" ;;
    *)
      [ -z "$prefix" ] || kf_die "one PREFIX only, got '$prefix' and '$1' (try --help)"
      prefix="$1"
      shift
      ;;
  esac
done
[ -n "$prefix" ] || kf_die "give the installation prefix, e.g. scripts/install.sh /opt/keyflow (try --help)"
prefix="$(kf_abspath "$prefix")"
build_dir="$(kf_abspath "$build_dir")"
mkdir -p "$prefix" 2>/dev/null && [ -w "$prefix" ] ||
  kf_die "cannot write to $prefix: choose a prefix you own (e.g. \$HOME/.local) or run as root"

step() { printf "\n==> %s\n" "$*" >&2; }

if [ "$deps" -eq 1 ]; then
  step "installing dependencies (scripts/install-deps.sh)"
  "$ROOT/scripts/install-deps.sh"
fi

step "building keyflow (Release, $build_dir)"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >&2
# Only what is installed (the binaries, the job libraries, the SDK), not the tests and benchmarks.
cmake --build "$build_dir" --target installables -j "${KEYFLOW_JOBS:-$(nproc)}" >&2

step "installing into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >&2

cat <<EOF

keyflow is installed in $prefix.

Start a local cluster (secure by default: its keys are made in .keyflow/keys) and run a
built-in job:
  export PATH="$prefix/bin:\$PATH"
  keyflow-start-cluster --workers 2    # logs, keys and checkpoints in .keyflow/
  source .keyflow/cluster.env          # the CLI's key and the coordinator's address
  keyflow jobs
  keyflow run --job count-window --input gen:events=100000,keys=1000,splits=1 --wait
  keyflow-stop-cluster

Write your own job (README.md, "Write your own job"):
  # CMakeLists.txt:  find_package(keyflow REQUIRED)
  #                  keyflow_add_job(sessions sessions.cc)
  cmake -S myjob -B myjob/build -DCMAKE_PREFIX_PATH=$prefix && cmake --build myjob/build
  keyflow jobs --job-library myjob/build/libsessions.so
  keyflow run --job-library myjob/build/libsessions.so --job sessions --input events/ --wait
Examples to start from: $prefix/share/keyflow/examples/ (built: $prefix/lib/keyflow/examples/).
EOF
