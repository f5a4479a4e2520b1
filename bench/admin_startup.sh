#!/usr/bin/env bash
# admin_startup.sh: what mq-admin's start-up costs (issue 16: rabbitmq-c and its OpenSSL are
# loaded when a bridge starts, not at start-up). Runs `mq-admin --version` and `mq-admin
# list` (a store with one queue) N times each, one process per run as a shell script would,
# and prints milliseconds per run and the shared libraries the binary needs at start-up;
# with BASE_BIN, the same for that build (another checkout's, such as one linking
# librabbitmq) and the ratios. Without one, the same binary with librabbitmq.so.4 preloaded
# stands in for a build that links it.
#
#   bench/admin_startup.sh [N] [BASE_BIN]     default N=500; MQ_BIN: default build/
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
MQ_BIN=${MQ_BIN:-$SRC/build}
N=${1:-500}
BASE_BIN=${2:-}
T=$(mktemp -d "${BENCH_DIR:-/var/tmp}/mq-bench-startup.XXXXXX")
trap 'rm -rf "$T"' EXIT
export MQ_STORE=$T/store
"$MQ_BIN/mq-admin" init >/dev/null && "$MQ_BIN/mq-admin" create q

# per_run BIN ARGS...: milliseconds per run of BIN ARGS, over N runs.
per_run() {
  local a b i
  a=$(date +%s.%N)
  for ((i = 0; i < N; i++)); do "$@" >/dev/null; done
  b=$(date +%s.%N)
  awk -v n="$N" -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", (b - a) * 1000 / n }'
}
libs() { ldd "$1" | grep -c '=>'; }
rabbit() { ldd "$1" | grep -q librabbitmq && echo yes || echo no; }

printf '%-44s %9s %9s %6s %10s\n' "mq-admin start-up, $N runs each" "version" "list" "libs" "librabbitmq"
row() {
  printf '%-44s %9s %9s %6s %10s\n' "$1 (ms/run)" "$2" "$3" "$(libs "$4/mq-admin")" "$(rabbit "$4/mq-admin")"
}
v=$(per_run "$MQ_BIN/mq-admin" --version)
l=$(per_run "$MQ_BIN/mq-admin" list)
row "this build" "$v" "$l" "$MQ_BIN"
# As if mq-admin linked rabbitmq-c: the same binary with the library (and the OpenSSL it
# needs) loaded at start-up, as the dynamic linker would for a DT_NEEDED entry.
rabbit_so=$(ldconfig -p | awk '/librabbitmq\.so\.4 /{print $NF; exit}')
if [ -n "$rabbit_so" ]; then
  pv=$(per_run env LD_PRELOAD="$rabbit_so" "$MQ_BIN/mq-admin" --version)
  pl=$(per_run env LD_PRELOAD="$rabbit_so" "$MQ_BIN/mq-admin" list)
  ev=$(per_run env "$MQ_BIN/mq-admin" --version)  # env's own exec, for a fair ratio
  el=$(per_run env "$MQ_BIN/mq-admin" list)
  printf '%-44s %9s %9s\n' "through env (ms/run)" "$ev" "$el"
  printf '%-44s %9s %9s\n' "through env, librabbitmq loaded (ms/run)" "$pv" "$pl"
  awk -v v="$pv" -v l="$pl" -v ev="$ev" -v el="$el" \
    'BEGIN { printf "loading librabbitmq at start-up would cost: version %.2fx, list %.2fx\n", v / ev, l / el }'
fi
if [ -n "$BASE_BIN" ]; then
  bv=$(per_run "$BASE_BIN/mq-admin" --version)
  bl=$(per_run "$BASE_BIN/mq-admin" list)
  row "base build" "$bv" "$bl" "$BASE_BIN"
  awk -v v="$v" -v l="$l" -v bv="$bv" -v bl="$bl" \
    'BEGIN { printf "this / base: version %.2f, list %.2f\n", v / bv, l / bl }'
fi
