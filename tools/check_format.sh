#!/usr/bin/env bash
# Fails, listing them, when C++ files under src/ include/ genai/ tests/ python/src/ fuzz/ bench/ are not
# as clang-format formats them (.clang-format; the clang-format Debian 12 ships, 14). Cheap (one
# clang-format process, seconds): CI runs it first (.ci/run, `make format-check`).
#   tools/check_format.sh [--fix] [ROOT]   --fix formats them in place (`make format`)
#   CLANG_FORMAT=clang-format-14           picks the binary
set -euo pipefail
fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
cd "${1:-$(dirname "$0")/..}"
CLANG_FORMAT=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
if [ -z "$CLANG_FORMAT" ]; then
  echo "check_format: clang-format not found (apt-get install clang-format)" >&2
  exit 2
fi
# The files git knows (not build trees or node_modules); in a copy without .git, all of them.
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- src include genai tests python/src fuzz bench |
      grep -E '\.(h|cpp|cc)$' || true
  else
    find src include genai tests python/src fuzz bench \( -name '*.h' -o -name '*.cpp' -o -name '*.cc' \) \
      -not -path '*/node_modules/*' 2>/dev/null || true
  fi
}
files=()
while IFS= read -r f; do [ -f "$f" ] && files+=("$f"); done < <(list_files)
if [ ${#files[@]} -eq 0 ]; then
  echo "check_format: no files found under $(pwd)" >&2
  exit 2
fi
if [ $fix = 1 ]; then
  "$CLANG_FORMAT" --style=file -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} file(s)"
  exit 0
fi
# --dry-run --Werror reports each unformatted spot as
# "FILE:LINE:COL: error: code should be clang-formatted [-Wclang-format-violations]".
rc=0
out=$("$CLANG_FORMAT" --style=file --dry-run --Werror "${files[@]}" 2>&1) || rc=$?
bad=$(printf '%s\n' "$out" |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if [ -n "$bad" ]; then
  echo "check_format: $(printf '%s\n' "$bad" | wc -l) file(s) not formatted ($("$CLANG_FORMAT" --version | head -1)):"
  printf '  %s\n' $bad
  echo "fix: make format (tools/check_format.sh --fix)"
  exit 1
fi
if [ $rc -ne 0 ]; then
  printf '%s\n' "$out" >&2
  echo "check_format: clang-format failed (exit $rc)" >&2
  exit 2
fi
echo "check_format: ${#files[@]} file(s) formatted"
