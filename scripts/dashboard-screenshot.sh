#!/usr/bin/env bash
# Regenerates the dashboard screenshot shown in the README (docs/dashboard.png): starts a
# cluster in a temporary run dir with the REST server on a free port, runs a rate-limited
# count-window job whose event time follows the wall clock (so the watermark lag is a real one)
# with a checkpoint every second, and captures http://127.0.0.1:PORT/ after the page has polled
# for --seconds real seconds (scripts/lib/cdp-screenshot.js: headless Chromium driven over the
# DevTools protocol; `chromium --screenshot` would run the page in virtual time, and its live
# charts would stay nearly empty). Stops the cluster and removes the run dir at exit.
#
#   scripts/dashboard-screenshot.sh [--out FILE] [--seconds S] [--workers N] [--build-dir DIR]
#                                   [--poll-ms MS] [--samples N]
#
#   --out FILE        the PNG to write (default docs/dashboard.png of the repo; - for none)
#   --seconds S       real seconds the page polls before the capture (default 30)
#   --poll-ms MS      the page's poll interval (default 1000, the dashboard's own)
#   --samples N       memory soak: N times during the S seconds print the page's JS heap (after
#                     a forced GC), DOM nodes, event listeners and polls, one line each, e.g.
#                     --seconds 600 --poll-ms 100 --samples 10 --out - (6000 polls, 20x the
#                     300-point cap)
#   --workers N       workers and parallelism of the job (default 3)
#   --build-dir DIR   where the binaries are: DIR/bin/keyflow* (default build/ of the repo)
#
# Needs chromium and node (scripts/install-deps.sh installs both).
set -euo pipefail

KF_PROG=dashboard-screenshot
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

out="$ROOT/docs/dashboard.png" seconds=30 workers=3 build_dir="$ROOT/build" poll_ms=1000 samples=0
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --out) kf_need "$@"; out="$2"; shift 2 ;;
    --seconds) kf_need "$@"; seconds="$2"; shift 2 ;;
    --workers) kf_need "$@"; workers="$2"; shift 2 ;;
    --build-dir) kf_need "$@"; build_dir="$2"; shift 2 ;;
    --poll-ms) kf_need "$@"; poll_ms="$2"; shift 2 ;;
    --samples) kf_need "$@"; samples="$2"; shift 2 ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || kf_die "--seconds must be a whole number >= 1, got '$seconds'"
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || kf_die "--workers must be >= 1, got '$workers'"
[[ "$poll_ms" =~ ^[1-9][0-9]*$ ]] || kf_die "--poll-ms must be a whole number >= 1, got '$poll_ms'"
[[ "$samples" =~ ^[0-9]+$ ]] || kf_die "--samples must be a whole number, got '$samples'"
command -v chromium >/dev/null || kf_die "chromium is not installed: run scripts/install-deps.sh"
command -v node >/dev/null || kf_die "node is not installed: run scripts/install-deps.sh"
build_dir="$(kf_abspath "$build_dir")"
[ "$out" = "-" ] || out="$(kf_abspath "$out")"
KEYFLOW="$build_dir/bin/keyflow"
[ -x "$KEYFLOW" ] || kf_die "$KEYFLOW is missing: build first (cmake --build $build_dir)"

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/keyflow-screenshot-XXXXXX")"
cleanup() {
  "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" >/dev/null 2>&1 || true
  rm -rf "$run_dir"
}
trap cleanup EXIT

# --port 0: free control and REST ports; the REST one goes to RUN_DIR/rest.port.
"$ROOT/scripts/start-cluster.sh" --workers "$workers" --port 0 --run-dir "$run_dir" \
  --build-dir "$build_dir" >/dev/null
# shellcheck disable=SC1091
source "$run_dir/cluster.env"
endpoint="$(cat "$run_dir/coordinator.endpoint")"
[ -s "$run_dir/rest.port" ] || kf_die "the coordinator wrote no REST port (see $run_dir/coordinator.log)"
url="$(cat "$run_dir/rest.url")/"
# The secure cluster serves HTTPS with its self-signed certificate: Chromium trusts exactly that
# key (its SPKI hash), nothing else.
if [ -f "$run_dir/keys/rest/tls.crt" ]; then
  KEYFLOW_CHROMIUM_SPKI="$(openssl x509 -in "$run_dir/keys/rest/tls.crt" -pubkey -noout |
    openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)"
  export KEYFLOW_CHROMIUM_SPKI
fi
[ "$poll_ms" = 1000 ] || url="$url?poll_ms=$poll_ms"
# The dashboard of a secure cluster asks for a token: cdp-screenshot.js hands it the viewer's
# (RUN_DIR/cluster.env) in the URL's fragment, which never leaves the browser.
export KEYFLOW_DASHBOARD_TOKEN_FILE="${KEYFLOW_REST_TOKEN_FILE:-}"

# Event time g*step from now for the g-th event of the whole stream: at 1000 events/s and
# step=1 it advances with the wall clock, so the watermark lag is the job's real one.
splits=$((workers * 2))
now_ms="$(date +%s%3N)"
"$KEYFLOW" run --coordinator "$endpoint" --job count-window --param time=event --param count=200 \
  --param timeout=12h --parallelism "$workers" --checkpoint-interval 1s \
  --input "gen:events=1000000000,keys=20000,splits=$splits,seed=7,rate=1000,start=$now_ms,step=1,disorder=300" \
  --output "$run_dir/out" >/dev/null
kf_log "job running; the dashboard at $url polls for $seconds s"
[ "$out" = "-" ] || mkdir -p "$(dirname "$out")"
sample_args=()
[ "$samples" = 0 ] || sample_args=(--samples "$samples")
node "$ROOT/scripts/lib/cdp-screenshot.js" "$url" "$out" --seconds "$seconds" --width 1400 \
  --height 1000 "${sample_args[@]}"
[ "$out" = "-" ] || kf_log "wrote $out"
