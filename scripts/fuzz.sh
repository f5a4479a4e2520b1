#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets (tests/fuzz/: fuzz_frames, fuzz_mime, fuzz_srmp,
# fuzz_json; clang with ASan and UBSan) in build-fuzz/, and run them.
#
#   scripts/fuzz.sh --ci               each target for MQ_FUZZ_SECONDS (30) under CTest, as CI does
#   scripts/fuzz.sh [TARGET [SECONDS]] TARGET (default: all four, one after another) for
#                                      SECONDS each (default 600), from its corpus
#
# What a run finds goes to build-fuzz/tests/fuzz/found/TARGET; a crash or a slow input is
# written as crash-* or timeout-* in the current directory, and libFuzzer prints how to replay
# it (build-fuzz/tests/fuzz/TARGET FILE). To keep new inputs in the checked-in corpus, merge
# them (only those that add coverage are copied):
#   build-fuzz/tests/fuzz/TARGET -merge=1 tests/fuzz/corpus/TARGET build-fuzz/tests/fuzz/found/TARGET
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(fuzz_frames fuzz_mime fuzz_srmp fuzz_json)
scripts/setup.sh
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQ_WERROR=ON -DMQ_FUZZ=ON \
  -DMQ_TESTS=OFF -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]}"
if [ "${1:-}" = --ci ]; then
  cd build-fuzz
  exec ctest --output-on-failure -j "$(nproc)" -L fuzz
fi
if [ $# -ge 1 ]; then
  case " ${targets[*]} " in
    *" $1 "*) targets=("$1") ;;
    *) echo "fuzz.sh: no target '$1' (${targets[*]})" >&2; exit 2 ;;
  esac
fi
seconds=${2:-600}
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/tests/fuzz/found/$t"
  echo "fuzz.sh: $t for ${seconds}s" >&2
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "build-fuzz/tests/fuzz/$t" -max_total_time="$seconds" -timeout=2 -rss_limit_mb=512 \
    -max_len=65536 -print_final_stats=1 "build-fuzz/tests/fuzz/found/$t" "tests/fuzz/corpus/$t"
done
