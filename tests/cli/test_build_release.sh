#!/bin/bash
# A packager's build (issue 15): a build with no type is Release, and `cmake
# -DCMAKE_BUILD_TYPE=Release` with no other option has
# warnings as warnings (MQ_WERROR off by default; scripts/build.sh turns it on), and the unit
# tests compile clean with -Werror at -O2 and -O3, where GCC 12 once reported -Wrestrict false
# positives in tests/unit/columns_test.cpp and conversation_test.cpp. Configures fresh build
# trees under $T and compiles those objects in each; the whole Release build is left to the
# packager's run.
. "$(dirname "$0")/lib.sh"

command -v cmake >/dev/null || skip "no cmake"
command -v make >/dev/null || skip "no make"

# configure DIR ARGS...: a fresh Makefile build tree of the source under test.
configure() {
  local dir=$1
  shift
  expect_rc 0 cmake -S "$MQ_SRC" -B "$dir" -G "Unix Makefiles" "$@"
}

# No build type given: Release, for users (issue 15: the default build installed 198 MB of
# tools with debug information).
configure "$T/plain"
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$T/plain/CMakeCache.txt" ||
  fail "a build with no type is $(grep '^CMAKE_BUILD_TYPE' "$T/plain/CMakeCache.txt")"
grep -q -- '-g\b' "$T/plain/CMakeFiles/mq.dir/flags.make" && fail "a default build compiles with -g"

configure "$T/default" -DCMAKE_BUILD_TYPE=Release
grep -q '^MQ_WERROR:BOOL=OFF$' "$T/default/CMakeCache.txt" ||
  fail "a Release build has MQ_WERROR $(grep '^MQ_WERROR' "$T/default/CMakeCache.txt")"
grep -q -- '-Werror' "$T/default/CMakeFiles/mq.dir/flags.make" &&
  fail "a default build compiles with -Werror"

# scripts/build.sh, used by scripts/test.sh and CI, keeps warnings errors.
grep -q -- '-DMQ_WERROR=ON' "$MQ_SRC/scripts/build.sh" || fail "scripts/build.sh does not pass -DMQ_WERROR=ON"

for level in -O2 -O3; do
  configure "$T/werror$level" -DCMAKE_BUILD_TYPE=Release -DMQ_WERROR=ON \
    "-DCMAKE_CXX_FLAGS_RELEASE=$level -DNDEBUG"
  expect_rc 0 make -C "$T/werror$level/tests" unit/columns_test.o unit/conversation_test.o
  grep -q 'Wrestrict\|error:' "$T/out" "$T/err" &&
    fail "the unit tests at $level -Werror: $(grep -m3 'error' "$T/err")"
done

finish
