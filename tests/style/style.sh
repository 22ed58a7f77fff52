#!/usr/bin/env bash
# The style checks of HACKING.md, on what changed since a base commit.
#   style.sh format SOURCE_DIR            the lines changed since tests/style/base (the commit the checks started
#                                         from: older code is reformatted when it is touched, not in one sweep that
#                                         would bury its history) must be as clang-format (.clang-format) writes them
#   style.sh tidy SOURCE_DIR BUILD_DIR    clang-tidy (.clang-tidy) clean on the C++ files changed since
#                                         tests/style/tidy-base (the commit at which every translation unit of the tree
#                                         was checked clean by hand; tests/style/base while there is no such file),
#                                         compiled as the build compiles them (its compile_commands.json)
# Exit 77 (skipped) when the tool or the git history is missing; TRAINDECK_REQUIRE_ALL=1 makes that a failure.
set -euo pipefail
mode=$1
src=$2
skip() {
  echo "style: $1"
  if [ "${TRAINDECK_REQUIRE_ALL:-0}" = 1 ]; then
    echo "style: TRAINDECK_REQUIRE_ALL=1: nothing may be skipped"
    exit 1
  fi
  exit 77
}
cd "$src"
base_file=tests/style/base
[ "$mode" = tidy ] && [ -f tests/style/tidy-base ] && base_file=tests/style/tidy-base
base=$(tr -d '[:space:]' < "$base_file")
git rev-parse --git-dir > /dev/null 2>&1 || skip "$src is not a git checkout: cannot tell which lines changed"
git cat-file -e "$base^{commit}" 2> /dev/null ||
  skip "commit $base ($base_file) is not in this clone; a shallow clone needs: git fetch --unshallow"
mapfile -t changed < <(git diff --name-only --diff-filter=ACMR "$base" -- '*.cpp' '*.h' '*.cu')

case "$mode" in
format)
  command -v clang-format-14 > /dev/null || skip "clang-format-14 is not installed (installer/install-deps.sh --tests)"
  [ "${#changed[@]}" -gt 0 ] || { echo "style: no C++ file changed since $base"; exit 0; }
  out=$(git clang-format --binary clang-format-14 --diff "$base" -- "${changed[@]}" 2>&1 || true)
  if echo "$out" | grep -q -e "did not modify any files" -e "no modified files to format"; then
    echo "style: the lines changed since $base in ${#changed[@]} files are formatted"
    exit 0
  fi
  echo "$out"
  echo "style: the lines above are not as clang-format writes them; fix with: git clang-format --binary clang-format-14 $base"
  exit 1
  ;;
tidy)
  build=$3
  command -v clang-tidy-14 > /dev/null || skip "clang-tidy-14 is not installed (installer/install-deps.sh --tests)"
  [ -f "$build/compile_commands.json" ] || { echo "style: $build/compile_commands.json is missing"; exit 1; }
  # Translation units only (headers are checked through them, .clang-tidy's HeaderFilterRegex); CUDA is nvcc's.
  units=()
  for f in "${changed[@]}"; do
    [[ "$f" == *.cpp ]] && grep -q "\"file\": \"$src/$f\"" "$build/compile_commands.json" && units+=("$f")
  done
  [ "${#units[@]}" -gt 0 ] || { echo "style: no compiled C++ file changed since $base"; exit 0; }
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  status=0
  printf '%s\n' "${units[@]}" | xargs -P 2 -n 1 clang-tidy-14 -p "$build" --quiet > "$log" 2>&1 || status=1
  grep -v -e "^[0-9]* warnings\? generated" -e "^Suppressed [0-9]* warnings" -e "^Use -header-filter" "$log" || true
  if [ "$status" -ne 0 ]; then
    echo "style: clang-tidy found the problems above in the files changed since $base"
    exit 1
  fi
  echo "style: clang-tidy is clean on the ${#units[@]} C++ files changed since $base"
  ;;
*)
  echo "usage: style.sh format|tidy SOURCE_DIR [BUILD_DIR]" >&2
  exit 2
  ;;
esac
