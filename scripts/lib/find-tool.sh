# shellcheck shell=bash
# Shared helper of scripts/format.sh and scripts/tidy.sh. Source it; it defines a function and
# sets nothing else.

# kf_find_tool SCRIPT NAME...: prints the first NAME that is on the PATH. None: prints
# "SCRIPT: <first NAME> is not installed: run scripts/install-deps.sh" on stderr and returns 2.
kf_find_tool() {
  local script="$1" c
  shift
  for c in "$@"; do
    if command -v "$c" >/dev/null 2>&1; then
      printf '%s\n' "$c"
      return 0
    fi
  done
  echo "$script: $1 is not installed: run scripts/install-deps.sh" >&2
  return 2
}
