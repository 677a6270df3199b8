#!/usr/bin/env bash
# Starts a keyflow session cluster in the background: one coordinator and N workers (worker i
# gets slot i), and returns once all N workers are registered with the coordinator.
#
#   scripts/start-cluster.sh --workers N [options]
#
#   --workers N            number of workers (default with --hosts: one per host line)
#   --port P               coordinator control port (default 6123; 0 = pick a free port)
#   --keys DIR             the cluster's key set (default RUN_DIR/keys): created on first use
#                          (`keyflow keys init`), worker keys added when more workers are asked
#                          for; every process gets --keys/--key-name (CURVE, known keys only)
#   --insecure             no keys, no encryption, no authentication: anyone who reaches a port
#                          can join or change the job (every process logs a warning)
#   --run-dir DIR          pid files, logs and the local workers' working directory (default
#                          ./.keyflow); one cluster per run dir. Everything the cluster writes
#                          is its user's alone: files 0600, directories 0700 (umask 077 here,
#                          and in every process); the run dir itself is made 0700
#   --group GROUP          let GROUP read the cluster's logs, output and state: the run dir
#                          becomes GROUP's and setgid (02750), files 0640 and directories 0750
#                          (umask 027, --group-readable for every process); checkpoints and
#                          keys stay private. Others never read anything
#   --checkpoint-dir DIR   checkpoints and savepoints (default RUN_DIR/checkpoints; with --hosts
#                          a shared file system path visible on every host)
#   --hosts FILE           start the workers over ssh on these hosts: one host (or user@host) per
#                          line, '#' starts a comment; worker i runs on host i mod #hosts
#   --coordinator-host H   address workers and clients use to reach the coordinator; its
#                          control port binds it (default 127.0.0.1; with --hosts: this
#                          machine's `hostname -f`)
#   --coordinator-bind A   interface the control port binds to instead (e.g. 0.0.0.0)
#   --rest-port P          the coordinator's REST API port (default 8081, or 0 with --port 0;
#                          0 = pick a free port, -1 = no REST server); the bound port goes to
#                          RUN_DIR/rest.port
#   --rest-bind A          interface the REST port binds to (default 127.0.0.1)
#                          A secure cluster serves HTTPS with KEYS/rest/tls.crt and tls.key
#                          (`keyflow keys init` makes them; `keyflow keys rest-tls` adds them to
#                          an older key set); clients pin the .crt (curl --cacert). The URL goes
#                          to RUN_DIR/rest.url. --insecure clusters serve plain HTTP.
#   --allowed-path DIR     a directory clients may name in --input, --output, --checkpoint-dir,
#                          --from-savepoint and savepoint --dir (repeatable). The coordinator
#                          always allows RUN_DIR and --checkpoint-dir, and refuses other paths
#                          (coordinator --allowed-path); `gen:` inputs are not paths
#   --data-host ADDR       address peers use to reach a worker's data endpoints
#                          (default 127.0.0.1; with --hosts: the worker's host from FILE)
#   --bind-host ADDR       interface the workers' data endpoints bind to (default: the
#                          address of the data host; 0.0.0.0 = every interface)
#   --build-dir DIR        where the binaries are: DIR/bin/keyflow* (default build/ of the repo;
#                          for an installed keyflow-start-cluster, its PREFIX)
#   --respawn              supervise each worker: restart it under the same slot when it dies
#                          and tell the coordinator at once how it ended (exit code, signal,
#                          crash of user code, out of memory under a cgroup memory limit;
#                          scripts/lib/worker-supervisor.sh --help)
#   --timeout S            give up if the workers are not all registered after S s (default 30)
#   --coordinator-arg ARG  extra flag for keyflow-coordinator (repeatable), e.g.
#                          --coordinator-arg=--heartbeat-timeout=3s
#   --worker-arg ARG       extra flag for every keyflow-worker (repeatable)
#   --log-level L          --log-level of every process (trace|debug|info|warn|error; default
#                          info); change it later with `keyflow log-level L`
#   --log-format F         --log-format of every process: text (default) or json
#   --log-max-size N, --log-max-files N
#                          rotation of every process's log file (defaults 64MiB and 5): each
#                          process writes RUN_DIR/<name>.log itself (--log-file), rotated to
#                          <name>.1.log ...; its stdout and stderr (startup errors, crash
#                          reports, the print sink's lines) go to RUN_DIR/<name>.out
#   --dry-run              print the commands that would run, start nothing
#
# Prints the coordinator endpoint on stdout (also in RUN_DIR/coordinator.endpoint); everything
# else goes to stderr. RUN_DIR/cluster.env points the CLI at the cluster (`source
# RUN_DIR/cluster.env`): its coordinator (KEYFLOW_COORDINATOR, the endpoint, also with --port 0),
# its keys (KEYFLOW_KEYS, or `export KEYFLOW_KEYS=DIR` as printed) and, with a REST
# server, names its URL, certificate and a read-only token: KEYFLOW_REST_URL, KEYFLOW_REST_CACERT
# and KEYFLOW_REST_TOKEN_FILE (KEYS/viewers/viewer.token, created on first use: every REST read
# of a secure cluster — the API, /metrics, the dashboard — needs a token; commands need the
# operator's, KEYS/clients/operator.token). Stop the cluster with
# scripts/stop-cluster.sh --run-dir DIR.
#
# With --hosts, every host needs password-less ssh from here and the same keyflow checkout and
# build at the same paths (shared file system or identical install); worker logs and pid files are
# written on the worker's host under the same run dir path. Worker i's host gets only its own
# secret key and the coordinator's public key, over ssh, in RUN_DIR/worker-i-keys (0700).
set -euo pipefail

KF_PROG=start-cluster
# The checkout, or PREFIX/share/keyflow of an installation (bin/keyflow-start-cluster and
# bin/keyflow-stop-cluster are symlinks to these scripts there).
ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
# shellcheck source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

workers="" port=6123 run_dir=".keyflow" checkpoint_dir="" hosts_file="" coordinator_host=""
# The binaries: build/bin of the checkout, or PREFIX/bin of an installation.
default_build_dir="$ROOT/build"
if [ ! -d "$default_build_dir" ] && [ -x "$ROOT/../../bin/keyflow-coordinator" ]; then
  default_build_dir="$(cd "$ROOT/../.." && pwd)"
fi
data_host="" bind_host="" build_dir="$default_build_dir" respawn=0 timeout_s=30 dry_run=0
keys_dir="" insecure=0 coordinator_bind="" rest_port="" rest_bind=127.0.0.1 group=""
coordinator_args=() worker_args=() allowed_paths=()


while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
    --workers) kf_need "$@"; workers="$2"; shift 2 ;;
    --port) kf_need "$@"; port="$2"; shift 2 ;;
    --run-dir) kf_need "$@"; run_dir="$2"; shift 2 ;;
    --group) kf_need "$@"; group="$2"; shift 2 ;;
    --checkpoint-dir) kf_need "$@"; checkpoint_dir="$2"; shift 2 ;;
    --hosts) kf_need "$@"; hosts_file="$2"; shift 2 ;;
    --coordinator-host) kf_need "$@"; coordinator_host="$2"; shift 2 ;;
    --coordinator-bind) kf_need "$@"; coordinator_bind="$2"; shift 2 ;;
    --rest-port) kf_need "$@"; rest_port="$2"; shift 2 ;;
    --rest-bind) kf_need "$@"; rest_bind="$2"; shift 2 ;;
    --keys) kf_need "$@"; keys_dir="$2"; shift 2 ;;
    --allowed-path) kf_need "$@"; allowed_paths+=("$2"); shift 2 ;;
    --insecure) insecure=1; shift ;;
    --data-host) kf_need "$@"; data_host="$2"; shift 2 ;;
    --bind-host) kf_need "$@"; bind_host="$2"; shift 2 ;;
    --build-dir) kf_need "$@"; build_dir="$2"; shift 2 ;;
    --respawn) respawn=1; shift ;;
    --timeout) kf_need "$@"; timeout_s="$2"; shift 2 ;;
    --coordinator-arg) kf_need "$@"; coordinator_args+=("$2"); shift 2 ;;
    --worker-arg) kf_need "$@"; worker_args+=("$2"); shift 2 ;;
    --log-level | --log-format | --log-max-size | --log-max-files)
      kf_need "$@"; coordinator_args+=("$1" "$2"); worker_args+=("$1" "$2"); shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) kf_usage; exit 0 ;;
    *) kf_die "unknown argument '$1' (try --help)" ;;
  esac
done

# ---- validate -----------------------------------------------------------------------------
hosts=()
if [ -n "$hosts_file" ]; then
  [ -r "$hosts_file" ] || kf_die "cannot read the hosts file '$hosts_file'"
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line%%#*}"
    line="$(echo "$line" | tr -d '[:space:]')"
    [ -n "$line" ] && hosts+=("$line")
  done <"$hosts_file"
  [ ${#hosts[@]} -gt 0 ] || kf_die "the hosts file '$hosts_file' lists no host"
  [ -n "$workers" ] || workers=${#hosts[@]}
fi
if ! [[ "$workers" =~ ^[1-9][0-9]*$ ]]; then
  kf_die "--workers N is required (N >= 1), got '${workers}'"
fi
if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -gt 65535 ]; then
  kf_die "--port must be 0..65535, got '$port'"
fi
if [ -z "$rest_port" ]; then
  rest_port=8081
  [ "$port" != "0" ] || rest_port=0  # a cluster on a free port gets a free REST port too
fi
if [ "$rest_port" != "-1" ] && { ! [[ "$rest_port" =~ ^[0-9]+$ ]] || [ "$rest_port" -gt 65535 ]; }; then
  kf_die "--rest-port must be 0..65535 or -1 (no REST server), got '$rest_port'"
fi
if ! [[ "$timeout_s" =~ ^[1-9][0-9]*$ ]]; then kf_die "--timeout must be >= 1 s"; fi
if [ "$insecure" -eq 1 ] && [ -n "$keys_dir" ]; then
  kf_die "--keys and --insecure exclude each other: give one of them"
fi
if [ -n "$group" ] && ! getent group "$group" >/dev/null; then
  kf_die "--group $group is not a group of this host (getent group $group found none):" \
    "create it (groupadd) or choose another"
fi
# What the cluster writes is its user's alone, or also readable by --group: set before the run
# dir, the logs and the .out files exist (the processes tighten their own umask the same way).
if [ -n "$group" ]; then
  umask 027
  coordinator_args+=(--group-readable)
  worker_args+=(--group-readable)
else
  umask 077
fi

build_dir="$(kf_abspath "$build_dir")"
run_dir="$(kf_abspath "$run_dir")"
[ -n "$checkpoint_dir" ] || checkpoint_dir="$run_dir/checkpoints"
checkpoint_dir="$(kf_abspath "$checkpoint_dir")"
for i in ${allowed_paths[@]+"${!allowed_paths[@]}"}; do
  [ -d "${allowed_paths[$i]}" ] ||
    kf_die "--allowed-path ${allowed_paths[$i]} is not a directory: create it first or drop the flag"
  allowed_paths[$i]="$(kf_abspath "${allowed_paths[$i]}")"
done
if [ "$insecure" -eq 0 ]; then
  [ -n "$keys_dir" ] || keys_dir="$run_dir/keys"
  keys_dir="$(kf_abspath "$keys_dir")"
fi
# The processes get their security from the flags below only, not from the caller's environment.
unset KEYFLOW_KEYS
KEYFLOW="$build_dir/bin/keyflow"
COORDINATOR="$build_dir/bin/keyflow-coordinator"
WORKER="$build_dir/bin/keyflow-worker"
SUPERVISOR="$ROOT/scripts/lib/worker-supervisor.sh"
if [ "$dry_run" -eq 0 ]; then
  for b in "$KEYFLOW" "$COORDINATOR" "$WORKER"; do
    [ -x "$b" ] || kf_die "$b not found: build first (cmake -S $ROOT -B $build_dir -G Ninja" \
      "-DCMAKE_BUILD_TYPE=Release && cmake --build $build_dir), or pass --build-dir"
  done
fi
if [ ${#hosts[@]} -gt 0 ] && [ -z "$coordinator_host" ]; then
  coordinator_host="$(hostname -f 2>/dev/null || hostname)"
fi
[ -n "$coordinator_host" ] || coordinator_host=127.0.0.1

# ---- refuse a second cluster in the same run dir --------------------------------------------
if [ -d "$run_dir" ]; then
  live=() stale=()
  for f in "$run_dir"/coordinator.pid "$run_dir"/worker-*.pid; do
    [ -f "$f" ] || continue
    pid="$(kf_pid_from_file "$f")"
    name="$(basename "$f" .pid)"
    host_file="$run_dir/${name%.supervisor}.host"  # worker started over ssh: pid on that host
    if [ -f "$host_file" ]; then
      host="$(cat "$host_file")"
      if [ "$dry_run" -eq 0 ] && [ -n "$pid" ] && kf_remote_alive "$host" "$pid"; then
        live+=("$name (pid $pid on $host)")
      else
        stale+=("$f")
      fi
    elif [ -n "$pid" ] && kf_is_keyflow_pid "$pid"; then
      live+=("$name (pid $pid)")
    else
      stale+=("$f")
    fi
  done
  if [ ${#live[@]} -gt 0 ]; then
    kf_die "a cluster is already running from $run_dir: ${live[*]}." \
      "Stop it with scripts/stop-cluster.sh --run-dir $run_dir, or use another --run-dir"
  fi
  if [ ${#stale[@]} -gt 0 ] && [ "$dry_run" -eq 0 ]; then
    kf_log "removing ${#stale[@]} stale pid file(s) of a cluster that is no longer running"
    rm -f "${stale[@]}"
    rm -f "$run_dir"/worker-*.host "$run_dir/coordinator.endpoint"
  fi
fi

run() {  # run CMD...: execute, or only print it with --dry-run
  if [ "$dry_run" -eq 1 ]; then
    printf '+'
    printf ' %q' "$@"
    printf '\n'
  else
    "$@"
  fi
}

started_ok=0
cleanup_on_failure() {
  if [ "$started_ok" -eq 0 ] && [ "$dry_run" -eq 0 ]; then
    kf_log "stopping what was started"
    "$ROOT/scripts/stop-cluster.sh" --run-dir "$run_dir" >/dev/null 2>&1 || true
  fi
}
trap cleanup_on_failure EXIT

# make_run_dir DIR: creates DIR, 0700 (or 02750 and --group's with --group): its files' names
# and everything in it are the cluster's user's (and the group's) only. A directory this user
# does not own, or a sticky one (/tmp), is not changed: a warning says so.
make_run_dir() {
  mkdir -p "$1"
  if [ ! -O "$1" ] || [ -k "$1" ]; then
    kf_log "WARNING: $1 is not this user's own directory, so its mode is left as it is" \
      "($(stat -c %a "$1")); give --run-dir a directory of your own"
  elif [ -n "$group" ]; then
    chgrp "$group" "$1" 2>/dev/null ||
      kf_die "cannot give $1 to group $group: chgrp needs you to be a member of $group"
    chmod 02750 "$1"
  else
    chmod 00700 "$1"  # the leading 0: GNU chmod keeps a directory's setgid bit otherwise
  fi
}
if [ "$dry_run" -eq 0 ]; then
  make_run_dir "$run_dir"
  mkdir -p "$checkpoint_dir"
fi
rotate_log() { if [ -f "$1" ]; then mv -f "$1" "$1.prev"; fi; }

# ---- keys ---------------------------------------------------------------------------------
# security_args ROLE_FLAGS...: the security flags of one process, into the array `sec`.
security_args() {  # security_args [KEY_NAME] [KEYS_DIR]
  if [ "$insecure" -eq 1 ]; then
    sec=(--insecure)
  else
    sec=(--keys "${2:-$keys_dir}")
    [ -z "${1:-}" ] || sec+=(--key-name "$1")
  fi
}
if [ "$insecure" -eq 1 ]; then
  kf_log "WARNING: --insecure: no encryption and no authentication; any process that can reach" \
    "the cluster's ports can join it, read its data or change its job"
elif [ ! -e "$keys_dir/coordinator.key" ]; then
  kf_log "creating the cluster's key set in $keys_dir"
  run "$KEYFLOW" keys init "$keys_dir" --workers "$workers" >/dev/null
else
  for ((i = 0; i < workers; i++)); do
    if [ ! -e "$keys_dir/workers/worker-$i.key" ]; then
      kf_log "adding the key of worker-$i to $keys_dir"
      run "$KEYFLOW" keys add-worker "worker-$i" --keys "$keys_dir" >/dev/null
    fi
  done
  if [ ! -e "$keys_dir/rest/tls.crt" ]; then
    kf_log "adding the REST server's TLS certificate to $keys_dir (keyflow keys rest-tls)"
    run "$KEYFLOW" keys rest-tls --keys "$keys_dir" >/dev/null
  fi
fi
# A read-only REST token for the cluster's local users: the dashboard, /metrics, the API's reads.
viewer_token="$keys_dir/viewers/viewer.token"
if [ "$insecure" -eq 0 ] && [ ! -e "$viewer_token" ]; then
  kf_log "adding a read-only REST token for the cluster's users: $viewer_token"
  run "$KEYFLOW" keys add-token viewer --role viewer --keys "$keys_dir" >/dev/null
fi
if [ "$dry_run" -eq 0 ]; then
  if [ "$insecure" -eq 1 ]; then
    echo "unset KEYFLOW_KEYS KEYFLOW_REST_CACERT KEYFLOW_REST_TOKEN_FILE  # an --insecure cluster" \
      >"$run_dir/cluster.env"
  else
    printf 'export KEYFLOW_KEYS=%q\n' "$keys_dir" >"$run_dir/cluster.env"
  fi
fi

# ---- coordinator --------------------------------------------------------------------------
coordinator_log="$run_dir/coordinator.log"
coordinator_out="$(kf_output_file "$coordinator_log")"
security_args ""
coordinator_cmd=("$COORDINATOR" --host "${coordinator_bind:-$coordinator_host}"
  --port "$port" --checkpoint-dir "$checkpoint_dir" "${sec[@]}" --rest-port "$rest_port"
  --log-file "$coordinator_log")
[ "$rest_port" = "-1" ] ||
  coordinator_cmd+=(--rest-bind "$rest_bind" --rest-port-file "$run_dir/rest.port")
if [ "$rest_port" != "-1" ] && [ "$insecure" -eq 0 ]; then
  coordinator_cmd+=(--rest-tls-cert "$keys_dir/rest/tls.crt" --rest-tls-key "$keys_dir/rest/tls.key")
fi
# Client paths: the run dir, the checkpoint dir and what the caller named, nothing else.
for d in "$run_dir" "$checkpoint_dir" ${allowed_paths[@]+"${allowed_paths[@]}"}; do
  coordinator_cmd+=(--allowed-path "$d")
done
coordinator_cmd+=(${coordinator_args[@]+"${coordinator_args[@]}"})
if [ "$dry_run" -eq 1 ]; then
  run setsid nohup "${coordinator_cmd[@]}"
  echo "  (stdout+stderr >> $coordinator_out, pid -> $run_dir/coordinator.pid)"
else
  rotate_log "$coordinator_log"
  rotate_log "$coordinator_out"
  rm -f "$run_dir/rest.port"
  : >"$coordinator_out"  # exists before the first poll below
  (exec setsid nohup "${coordinator_cmd[@]}" >>"$coordinator_out" 2>&1 </dev/null) &
  coordinator_pid=$!
  echo "$coordinator_pid" >"$run_dir/coordinator.pid"

  # Wait for "keyflow-coordinator: listening on tcp://0.0.0.0:<port>" (the real port with 0).
  deadline=$((SECONDS + 10))
  bound_port=""
  while :; do
    bound_port="$(sed -n 's/^keyflow-coordinator: listening on tcp:\/\/.*:\([0-9][0-9]*\)$/\1/p' \
      "$coordinator_out" 2>/dev/null | tail -n 1 || true)"
    [ -n "$bound_port" ] && break
    if ! kf_pid_alive "$coordinator_pid"; then
      rc=0
      wait "$coordinator_pid" || rc=$?
      kf_log "the coordinator exited (status $rc) instead of starting:"
      kf_log_excerpts "$coordinator_log"
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      kf_log "the coordinator (pid $coordinator_pid) did not start listening within 10 s:"
      kf_log_excerpts "$coordinator_log"
      exit 1
    fi
    sleep 0.1
  done
  port="$bound_port"
fi
endpoint="tcp://$coordinator_host:$port"
[ "$dry_run" -eq 1 ] || echo "$endpoint" >"$run_dir/coordinator.endpoint"

# ---- workers ------------------------------------------------------------------------------
worker_cmd() {  # worker_cmd I DATA_HOST [KEYS_DIR]: the worker's command line, into `cmd`
  security_args "worker-$1" "${3:-}"
  cmd=("$WORKER" --coordinator "$endpoint" --slot "$1" --data-host "$2" "${sec[@]}"
    --log-file "$run_dir/worker-$1.log")
  [ -z "$bind_host" ] || cmd+=(--bind-host "$bind_host")
  cmd+=(${worker_args[@]+"${worker_args[@]}"})
}

start_local_worker() {
  local i="$1" log="$run_dir/worker-$1.log" out
  out="$(kf_output_file "$log")"
  worker_cmd "$i" "${data_host:-127.0.0.1}"
  if [ "$dry_run" -eq 1 ]; then
    if [ "$respawn" -eq 1 ]; then
      run setsid nohup "$SUPERVISOR" --pid-file "$run_dir/worker-$i.pid" --log "$out" -- "${cmd[@]}"
    else
      run setsid nohup "${cmd[@]}"
      echo "  (stdout+stderr >> $out, pid -> $run_dir/worker-$i.pid)"
    fi
    return
  fi
  rotate_log "$log"
  rotate_log "$out"
  # In the run dir, as a remote worker: its default --state-dir (keyflow-state) and --cache-dir
  # are there, not in the caller's working directory.
  if [ "$respawn" -eq 1 ]; then
    rm -f "$run_dir/worker-$i.pid"
    (cd "$run_dir" && exec setsid nohup "$SUPERVISOR" --pid-file "$run_dir/worker-$i.pid" \
      --log "$out" -- "${cmd[@]}" >/dev/null 2>&1 </dev/null) &
    echo $! >"$run_dir/worker-$i.supervisor.pid"
  else
    (cd "$run_dir" && exec setsid nohup "${cmd[@]}" >>"$out" 2>&1 </dev/null) &
    echo $! >"$run_dir/worker-$i.pid"
  fi
}

# send_worker_keys I HOST: puts worker i's own secret key and the coordinator's public key (and
# nothing else of the key set) into RUN_DIR/worker-i-keys on HOST (0700), over ssh.
send_worker_keys() {
  local i="$1" host="$2" dir="$run_dir/worker-$1-keys"
  if [ "$dry_run" -eq 1 ]; then
    run kf_ssh_put "$host" "$keys_dir/coordinator.pub" "$dir/coordinator.pub" 0644
    run kf_ssh_put "$host" "$keys_dir/workers/worker-$i.key" "$dir/workers/worker-$i.key" 0600
    return
  fi
  kf_ssh_put "$host" "$keys_dir/coordinator.pub" "$dir/coordinator.pub" 0644 &&
    kf_ssh_put "$host" "$keys_dir/workers/worker-$i.key" "$dir/workers/worker-$i.key" 0600 ||
    kf_die "could not copy the key of worker-$i to $host over ssh (needs password-less ssh)"
}

start_remote_worker() {
  local i="$1" host="$2" log="$run_dir/worker-$1.log" remote pid out
  if [ "$insecure" -eq 0 ]; then
    send_worker_keys "$i" "$host"
    worker_cmd "$i" "${data_host:-${host#*@}}" "$run_dir/worker-$i-keys"
  else
    worker_cmd "$i" "${data_host:-${host#*@}}"
  fi
  local quoted_cmd quoted_run quoted_log quoted_out
  out="$(kf_output_file "$log")"
  quoted_cmd="$(printf '%q ' "${cmd[@]}")"
  quoted_run="$(printf '%q' "$run_dir")"
  quoted_log="$(printf '%q' "$log")"
  quoted_out="$(printf '%q' "$out")"
  # The log the worker writes itself; its stdout+stderr (and the supervisor's lines) to .out.
  local prev="{ [ ! -f $quoted_log ] || mv -f $quoted_log $quoted_log.prev; } &&
    { [ ! -f $quoted_out ] || mv -f $quoted_out $quoted_out.prev; }"
  # The same umask and run dir mode as here (make_run_dir).
  local setup
  setup="umask $(umask) && mkdir -p $quoted_run"
  if [ -n "$group" ]; then
    setup="$setup && chgrp $(printf '%q' "$group") $quoted_run && chmod 02750 $quoted_run"
  else
    setup="$setup && { [ ! -O $quoted_run ] || [ -k $quoted_run ] || chmod 00700 $quoted_run; }"
  fi
  if [ "$respawn" -eq 1 ]; then
    remote="$setup && cd $quoted_run && $prev &&
      (setsid nohup $(printf '%q' "$SUPERVISOR") --pid-file $(printf '%q' "$run_dir/worker-$i.pid") \
        --log $quoted_out -- $quoted_cmd >/dev/null 2>&1 </dev/null & echo \$!)"
  else
    remote="$setup && cd $quoted_run && $prev &&
      (setsid nohup $quoted_cmd >>$quoted_out 2>&1 </dev/null & echo \$!)"
  fi
  if [ "$dry_run" -eq 1 ]; then
    run ssh -n -o BatchMode=yes -o ConnectTimeout=10 "$host" "$remote"
    return
  fi
  pid="$(kf_ssh "$host" "$remote")" || kf_die "could not start worker $i on $host over ssh" \
    "(needs password-less ssh and the keyflow build at $build_dir on that host)"
  [[ "$pid" =~ ^[0-9]+$ ]] || kf_die "starting worker $i on $host printed '$pid' instead of a pid"
  echo "$host" >"$run_dir/worker-$i.host"
  if [ "$respawn" -eq 1 ]; then
    echo "$pid" >"$run_dir/worker-$i.supervisor.pid"
  else
    echo "$pid" >"$run_dir/worker-$i.pid"
  fi
}

for ((i = 0; i < workers; i++)); do
  if [ ${#hosts[@]} -gt 0 ]; then
    start_remote_worker "$i" "${hosts[$((i % ${#hosts[@]}))]}"
  else
    start_local_worker "$i"
  fi
done

if [ "$dry_run" -eq 1 ]; then
  echo "(dry run: nothing started; the cluster would be reachable at $endpoint)"
  started_ok=1
  exit 0
fi

# ---- wait until every slot 0..N-1 is registered ----------------------------------------------
kf_log "coordinator listening on $endpoint (pid $coordinator_pid); waiting for $workers worker(s)"
deadline=$((SECONDS + timeout_s))
while :; do
  slots="$(kf_status_json "$KEYFLOW" "$endpoint" "$run_dir" | kf_registered_slots)"
  missing=()
  for ((i = 0; i < workers; i++)); do
    grep -qx "$i" <<<"$slots" || missing+=("$i")
  done
  [ ${#missing[@]} -eq 0 ] && break
  if ! kf_pid_alive "$coordinator_pid"; then
    kf_log "the coordinator (pid $coordinator_pid) exited while workers were registering:"
    kf_log_excerpts "$coordinator_log"
    exit 1
  fi
  if [ "$respawn" -eq 0 ] && [ ${#hosts[@]} -eq 0 ]; then
    for i in "${missing[@]}"; do
      pid="$(kf_pid_from_file "$run_dir/worker-$i.pid")"
      if [ -n "$pid" ] && ! kf_pid_alive "$pid"; then
        kf_log "worker $i (pid $pid) exited before registering:"
        kf_log_excerpts "$run_dir/worker-$i.log"
        exit 1
      fi
    done
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    kf_log "only $((workers - ${#missing[@]})) of $workers worker(s) registered within" \
      "${timeout_s} s; missing slot(s): ${missing[*]}"
    for i in "${missing[@]}"; do
      if [ -f "$run_dir/worker-$i.host" ]; then
        host="$(cat "$run_dir/worker-$i.host")"
        for f in "$run_dir/worker-$i.log" "$run_dir/worker-$i.out"; do
          echo "---- last lines of $f on $host ----" >&2
          kf_ssh "$host" "tail -n 15 $(printf '%q' "$f")" >&2 || true
        done
      else
        kf_log_excerpts "$run_dir/worker-$i.log"
      fi
    done
    kf_log_excerpts "$coordinator_log" 5
    exit 1
  fi
  sleep 0.2
done

started_ok=1
pids=()
for ((i = 0; i < workers; i++)); do
  pids+=("$(kf_pid_from_file "$run_dir/worker-$i.pid")")
done
# The CLI's default coordinator for whoever sources cluster.env (the port may have been 0).
printf 'export KEYFLOW_COORDINATOR=%q\n' "$endpoint" >>"$run_dir/cluster.env"
kf_log "cluster up: coordinator $endpoint, $workers worker(s) registered" \
  "(pids ${pids[*]}$([ "$respawn" -eq 1 ] && echo ", respawned on exit"))"
stop_command=scripts/stop-cluster.sh
[ "$(basename "$0")" != keyflow-start-cluster ] || stop_command=keyflow-stop-cluster
kf_log "logs and pid files in $run_dir; stop with: $stop_command --run-dir $run_dir"
if [ "$insecure" -eq 0 ]; then
  kf_log "point the keyflow CLI at the cluster's keys: export KEYFLOW_KEYS=$keys_dir" \
    "(or: source $run_dir/cluster.env, which also sets KEYFLOW_COORDINATOR=$endpoint)"
else
  kf_log "point the keyflow CLI at the cluster: source $run_dir/cluster.env" \
    "(KEYFLOW_COORDINATOR=$endpoint)"
fi
if [ "$rest_port" != "-1" ] && [ -f "$run_dir/rest.port" ]; then
  rest_host="$rest_bind"
  [ "$rest_host" != "0.0.0.0" ] || rest_host="$coordinator_host"
  rest_scheme=https
  [ "$insecure" -eq 0 ] || rest_scheme=http
  rest_url="$rest_scheme://$rest_host:$(cat "$run_dir/rest.port")"
  echo "$rest_url" >"$run_dir/rest.url"
  printf 'export KEYFLOW_REST_URL=%q\n' "$rest_url" >>"$run_dir/cluster.env"
  kf_log "REST API: $rest_url/api/v1/overview; dashboard: $rest_url/"
  if [ "$insecure" -eq 0 ]; then
    printf 'export KEYFLOW_REST_CACERT=%q KEYFLOW_REST_TOKEN_FILE=%q\n' \
      "$keys_dir/rest/tls.crt" "$viewer_token" >>"$run_dir/cluster.env"
    kf_log "the REST server's certificate (pin it: curl --cacert): $keys_dir/rest/tls.crt"
    kf_log "every REST request needs a token (the dashboard asks for it): reads take the" \
      "viewer token $viewer_token, commands (cancel, stop, savepoints, rescale) the operator" \
      "token $keys_dir/clients/operator.token, as -H \"Authorization: Bearer \$(cat FILE)\""
  else
    kf_log "REST commands are off on an --insecure cluster (read-only endpoints only)"
  fi
fi
echo "$endpoint"
