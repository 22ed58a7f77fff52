#!/usr/bin/env bash
# The fuzz entries of CTest (tests/fuzz/CMakeLists.txt), two steps:
#   fuzz.sh build SOURCE_DIR BUILD_DIR GENERATOR TARGET...   configures and builds the clang build (TRAINDECK_FUZZ=ON)
#   fuzz.sh run EXECUTABLE CORPUS_DIR WORK_DIR SECONDS [OPTION...]   runs one target over a copy of its corpus
#                                                                  (OPTIONs go to libFuzzer, e.g. -dict=FILE)
# A missing clang or libFuzzer runtime is a skip (exit 77) that names what to install, and a failure under
# TRAINDECK_REQUIRE_ALL=1, as in the other tests. Any crash, sanitizer report, leak, timeout or out-of-memory is a
# failure; the input that caused it stays under WORK_DIR/artifacts.
set -uo pipefail

missing() {
  if [ "${TRAINDECK_REQUIRE_ALL:-}" = 1 ]; then
    echo "fuzz: $1 (TRAINDECK_REQUIRE_ALL=1: nothing may be skipped)" >&2
    exit 1
  fi
  echo "fuzz: skipped: $1" >&2
  exit 77
}

case "${1:-}" in
build)
  [ $# -ge 5 ] || { echo "usage: fuzz.sh build SOURCE_DIR BUILD_DIR GENERATOR TARGET..." >&2; exit 2; }
  source_dir=$2 build_dir=$3 generator=$4
  shift 4
  command -v clang++ >/dev/null && command -v clang >/dev/null ||
    missing "no clang++ on PATH; install clang and libclang-rt-14-dev (bash installer/install-deps.sh --tests)"
  # libFuzzer's runtime comes separately from clang in Debian (libclang-rt-14-dev): link an empty target to know.
  probe=$(mktemp -d)
  trap 'rm -rf "$probe"' EXIT
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' >"$probe/probe.cpp"
  clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" 2>"$probe/log" ||
    missing "clang++ cannot link a libFuzzer target ($(head -c 300 "$probe/log")); install libclang-rt-14-dev"
  set -e
  # A unity build: each library compiles as a few files that each include several of its sources, so nlohmann::json's
  # and httplib's templates are parsed, instrumented and optimised once a batch instead of once a source. Measured
  # from scratch on this 2-core machine: 836 s of compiler time a file at a time, 360 s in batches (185 s wall). The
  # targets and what they fuzz are the same code; only the grouping into translation units differs.
  cmake -S "$source_dir" -B "$build_dir" -G "$generator" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
    -DTRAINDECK_FUZZ=ON -DTRAINDECK_CUDA=OFF -DCMAKE_UNITY_BUILD=ON >"$probe/configure.log" ||
    { cat "$probe/configure.log"; exit 1; }
  # Two jobs: the CI machine has two cores, and ctest -j2 runs other tests beside this one.
  time cmake --build "$build_dir" --target "$@" --parallel 2
  ;;
run)
  [ $# -ge 5 ] || { echo "usage: fuzz.sh run EXECUTABLE CORPUS_DIR WORK_DIR SECONDS [OPTION...]" >&2; exit 2; }
  executable=$2 corpus=$3 work=$4 seconds=$5
  shift 5
  [ -x "$executable" ] || missing "$executable was not built (see the fuzz_build test)"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  # The targets' temp files (a worker's state folder, checkpoints written back) in memory where there is a tmpfs:
  # the worker's SQLite commits fsync, and on a disk that alone slows the worker target four times.
  tmp=$(mktemp -d /dev/shm/traindeck-fuzz-XXXXXX 2>/dev/null || mktemp -d "$work/tmp-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # A copy: what the fuzzer adds stays out of the source tree. The crash-* regression inputs are replayed with the
  # rest of the corpus before the first mutation.
  cp "$corpus"/* "$work/corpus/"
  # Own exit codes: libFuzzer's default for its own reports is 77, which CTest would take for a skip.
  TMPDIR="$tmp" "$executable" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" 2>&1 | tail -n 120
  status=${PIPESTATUS[0]}
  rm -rf "$tmp"
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $(basename "$executable") failed (exit $status); the input is in $work/artifacts/:" >&2
    ls -l "$work/artifacts" >&2
    echo "fuzz: once fixed, keep it as $corpus/crash-<what> (a regression input)" >&2
    exit 1
  fi
  ;;
*)
  echo "usage: fuzz.sh build|run ... (see the comment at the top)" >&2
  exit 2
  ;;
esac
