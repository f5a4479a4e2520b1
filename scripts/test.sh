#!/usr/bin/env bash
# test.sh: set up, build, and run every test: first the normal build, then the suite built
# with AddressSanitizer and UndefinedBehaviorSanitizer (all but the tests labelled slow), then
# the fuzz targets for a bounded time each (scripts/fuzz.sh --ci). Warnings are errors in all.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
# One test more than there are cores: most tests spend their time waiting (sleeps, fsync, a
# throttled pipe, a broker starting), and the longest start first (COST, tests/CMakeLists.txt).
jobs=$(($(nproc) + 1))
(cd build && ctest --output-on-failure -j "$jobs")
# The sanitized run leaves out the tests labelled "slow" (wall-clock bounds, tens of
# thousands of processes: tests/CMakeLists.txt); they ran above.
scripts/build.sh build-asan -DMQ_SANITIZE=ON
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "$jobs" -LE slow)
# The parsers of another machine's bytes, fuzzed from their corpus (tests/fuzz/).
scripts/fuzz.sh --ci
