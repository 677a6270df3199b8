#!/usr/bin/env bash
# Installs every Debian package keyflow needs to build, test and run.
# Idempotent: runs `apt-get update` and `apt-get install` only when a package is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3
  libzmq3-dev cppzmq-dev libcereal-dev libboost-program-options-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libabsl-dev libxxhash-dev libsimdjson-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  iproute2 procps psmisc
  # hardening (issue 6): clang + libFuzzer/sanitizer runtimes for scripts/fuzz.sh, llvm for
  # llvm-symbolizer (readable sanitizer stacks), clang-format and clang-tidy for
  # scripts/format.sh and scripts/tidy.sh
  clang libclang-rt-dev llvm clang-format clang-tidy
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
