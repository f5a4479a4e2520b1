#!/usr/bin/env bash
# groups.sh: conversation group selection stays O(log n) in the number of groups and messages.
# Two stores hold the same 200,000 conversation messages in one queue: one as 10 groups of
# 20,000, the other as 100,000 groups of 2 (one conversation each, priorities 0..7 mixed).
# For each it times RUNS receives, one process each, that must choose a group (the two stores
# take turns, in rounds, so that other load falls on both alike):
#
#   (a) mq-receive q --top 1                 plain RECEIVE TOP(1): choose, remove, print
#   (b) mq-receive q --top 1 --exec true     transactional: lock the group, run, commit
#
# and prints the medians and the ratio 100,000 groups / 10 groups, against the issue's bound
# of 2x.
#
#   bench/groups.sh [--quick]
#
# --quick: 20,000 messages, 10 vs 10,000 groups, 100 runs, for a smoke test.
# Environment: BENCH_DIR  parent of the temporary directory (default /var/tmp), removed at end
#              MQ_BIN     directory of built mq tools (default: build $SRC/build)
#              RUNS       timed receives per case (default 300)
# Needs gcc (bench/c/rep.c times the runs: posix_spawn + wait4 + CLOCK_MONOTONIC).
set -euo pipefail

QUICK=0
for arg in "$@"; do
  case $arg in
    --quick) QUICK=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
      exit 0
      ;;
    *)
      echo "groups.sh: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

MESSAGES=200000
BIG=100000
RUNS=${RUNS:-300}
if [ "$QUICK" = 1 ]; then
  MESSAGES=20000
  BIG=10000
  RUNS=100
fi
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '%s\n' "$*" >&2; }
die() {
  say "groups.sh: $*"
  exit 1
}
command -v gcc >/dev/null || die "gcc is missing (apt-get install build-essential)"

TMP=$(mktemp -d "${BENCH_DIR:-/var/tmp}/mq-bench-groups.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
if [ -z "${MQ_BIN:-}" ]; then
  "$SRC/scripts/build.sh" "$SRC/build" >/dev/null || die "build failed"
  MQ_BIN=$SRC/build
fi
export PATH=$MQ_BIN:$PATH
gcc -O2 "$SRC/bench/c/rep.c" -o "$TMP/rep" || die "cannot build rep.c"

# populate DIR GROUPS: the store DIR with MESSAGES messages in GROUPS groups, imported in one
# transaction (mq-admin import makes the conversations with their sequence numbers).
populate() {
  local dir=$1 groups=$2 per=$((MESSAGES / $2))
  mq-admin -s "$dir" init
  mq-admin -s "$dir" create q
  awk -v groups="$groups" -v per="$per" 'BEGIN {
    for (s = 0; s < per; s++)
      for (g = 0; g < groups; g++)
        printf "{\"conversation_handle\":\"%08x-0000-4000-8000-%012x\",\"priority\":%d," \
               "\"message_sequence_number\":%d,\"message_type_name\":\"DEFAULT\"," \
               "\"body\":\"g%d.%d\"}\n", g + 1, g + 1, g % 8, s, g, s
  }' >"$TMP/in.json"
  mq-admin -s "$dir" import q <"$TMP/in.json"
  rm -f "$TMP/in.json"
  [ "$(mq-admin -s "$dir" stat q --json | sed 's/.*"messages":\([0-9]*\).*/\1/')" = "$MESSAGES" ] ||
    die "populating $dir failed"
}

# timed FILE -- COMMAND...: N runs, each run's ns appended to FILE.
timed() {
  "$TMP/rep" "$N" -s "$1" -- "${@:3}" >/dev/null || die "'${*:3}' failed"
}
# median FILE: the median of FILE's values, in µs.
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.0f", v[int((NR + 1) / 2)] / 1000 }'; }

say "groups.sh: populating ($MESSAGES messages each)..."
populate "$TMP/g10" 10
populate "$TMP/g100k" "$BIG"

# The two stores take turns, ROUNDS rounds of RUNS/ROUNDS receives each, so that whatever
# else the machine does falls on both alike; 10 untimed receives each first.
ROUNDS=6
N=10
for store in g10 g100k; do
  timed "$TMP/warm" -- mq-receive -s "$TMP/$store" q --top 1
  timed "$TMP/warm" -- mq-receive -s "$TMP/$store" q --top 1 --exec true
done
N=$((RUNS / ROUNDS))
for ((r = 0; r < ROUNDS; r++)); do
  for store in g10 g100k; do
    timed "$TMP/$store.a" -- mq-receive -s "$TMP/$store" q --top 1
    timed "$TMP/$store.b" -- mq-receive -s "$TMP/$store" q --top 1 --exec true
  done
done
declare -A T
for store in g10 g100k; do
  T[$store.a]=$(median "$TMP/$store.a")
  T[$store.b]=$(median "$TMP/$store.b")
  mq-admin -s "$TMP/$store" check >/dev/null || die "mq-admin check failed on $store"
done

echo "mq conversation group selection: $MESSAGES messages, median of $RUNS runs (µs per process)"
printf '  %-44s %12s %14s %8s\n' case "10 groups" "$BIG groups" ratio
for c in a b; do
  case $c in
    a) name='(a) mq-receive --top 1' ;;
    b) name='(b) mq-receive --top 1 --exec true' ;;
  esac
  ratio=$(awk -v x="${T[g100k.$c]}" -v y="${T[g10.$c]}" 'BEGIN { printf "%.2f", x / y }')
  verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 2.0 ? "ok (<= 2x)" : "OVER 2x") }')
  printf '  %-44s %12s %14s %8s  %s\n' "$name" "${T[g10.$c]}" "${T[g100k.$c]}" "$ratio" "$verdict"
done
echo "  machine: $(nproc) CPUs, $(uname -sr), store in ${BENCH_DIR:-/var/tmp}"
