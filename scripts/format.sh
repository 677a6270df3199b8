#!/usr/bin/env bash
# Formats every C/C++ file of keyflow with clang-format and the root .clang-format (Google
# based, 100 columns).
#
#   scripts/format.sh           rewrites the files in place
#   scripts/format.sh --check   changes nothing; lists the files that would change and exits 1
#                               if there are any (CI runs this)
#   scripts/format.sh [--check] FILE...   only these files
#
# "Our" files: *.h, *.cc, *.hpp, *.cpp below the repository root, except build directories
# (build*/), hidden directories (.git, .cache, ...) and anything git ignores.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "format.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done

# shellcheck source=lib/find-tool.sh
source scripts/lib/find-tool.sh
clang_format="$(kf_find_tool format.sh clang-format clang-format-14)"

if [ ${#files[@]} -eq 0 ]; then
  # Tracked and untracked-but-not-ignored files, so new files are checked before their commit.
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
                           '*.h' '*.cc' '*.hpp' '*.cpp' | grep -v -E '^(build[^/]*|\.[^/]+)/' \
                           | while read -r f; do [ -f "$f" ] && echo "$f"; done)
  else
    mapfile -t files < <(find . -type d \( -name 'build*' -o -name '.*' ! -name . \) -prune -o \
                           -type f \( -name '*.h' -o -name '*.cc' -o -name '*.hpp' \
                           -o -name '*.cpp' \) -print | sed 's|^\./||' | sort)
  fi
fi

if [ "$check" -eq 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 "$clang_format" -i --style=file
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi

unformatted=()
for f in "${files[@]}"; do
  if ! "$clang_format" --style=file "$f" | cmp -s - "$f"; then unformatted+=("$f"); fi
done
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "format.sh: ${#unformatted[@]} of ${#files[@]} files are not clang-formatted:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "format.sh: run scripts/format.sh (or clang-format -i FILE) and commit the result" >&2
  exit 1
fi
echo "format.sh: all ${#files[@]} files are clang-formatted"
