#!/usr/bin/env bash
# Installs every Debian package keyflow needs to build, test and run.
# Idempotent: runs `apt-get update` and `apt-get install` only when a package is missing.
#
#   scripts/install-deps.sh            install what is missing (sudo when not root)
#   scripts/install-deps.sh --check    list what is missing, install nothing (exit 1 if any)
#   scripts/install-deps.sh --help     this text
set -euo pipefail

check_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --check) check_only=1; shift ;;
    *) echo "install-deps.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3
  libzmq3-dev cppzmq-dev libcereal-dev libboost-program-options-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libabsl-dev libxxhash-dev libsimdjson-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libsodium-dev  # SHA-256 of job libraries (common/security/sha256.h)
  iproute2 procps psmisc
  ccache  # scripts/test.sh and install.sh compile through it when present
  # hardening (issue 6): clang + libFuzzer/sanitizer runtimes for scripts/fuzz.sh, llvm for
  # llvm-symbolizer (readable sanitizer stacks), clang-format and clang-tidy for
  # scripts/format.sh and scripts/tidy.sh
  clang libclang-rt-dev llvm clang-format clang-tidy
  # issue 11: the RocksDB state backend
  librocksdb-dev
  # issue 12: the coordinator's REST server, the dashboard's charting library (bundled into the
  # coordinator at build time), and the real servers the tests run against it (Prometheus
  # scrapes /metrics, headless Chromium loads the dashboard); curl for the scripts
  libcpp-httplib-dev libjs-chart.js prometheus chromium curl
  # scripts/dashboard-screenshot.sh drives Chromium over the DevTools protocol in real time
  nodejs
  # issue 13: TLS for the REST API (common/security/tls_certificate.cc: OpenSSL's C API); the
  # openssl CLI pins the certificate in scripts/dashboard-screenshot.sh
  libssl-dev openssl
  # Kafka connectors: librdkafka (its mock cluster, rdkafka_mock.h, is the broker of the tests)
  # and kcat (Debian's kafkacat) for the README's copy-paste session
  librdkafka-dev kafkacat
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

if [ "$check_only" -eq 1 ]; then
  echo "install-deps: missing ${missing[*]}"
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
