#!/usr/bin/env bash
# pipes.sh: what the receive protocol of issue 11 costs and what it buys. A receive Locks a
# batch in one transaction, writes it with no transaction open, waits until the reader has
# taken it, then removes it in a second transaction; before, one transaction was held open
# across the output. Prints:
#
#   (1) drain: `mq-receive --all -l | cat >/dev/null` of N 100-byte messages (median of the
#       rounds), and the same with the tools of MQ_BIN_BEFORE if given;
#   (2) the latency of `mq-send` to another queue, idle and while a reader of a deep queue
#       stalls (`mq-receive --all -l | sleep`): median and max of the sends, and the ratio;
#   (3) one `mq-receive` per process (a message of 100 bytes, stdout to /dev/null): median,
#       and the same with MQ_BIN_BEFORE, the two interleaved.
#
#   bench/pipes.sh [--quick]
#
# Environment: MQ_BIN         directory of the built tools (default: $SRC/build)
#              MQ_BIN_BEFORE  tools to compare with (e.g. a build of an older commit); optional
#              BENCH_DIR      parent of the temporary directory (default /var/tmp)
# --quick: N = 100,000 instead of 1,000,000 and fewer repetitions.
set -euo pipefail

N=1000000 ROUNDS=3 SENDS=50 SINGLE=200
if [ "${1:-}" = --quick ]; then N=100000 ROUNDS=1 SENDS=20 SINGLE=50; fi
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NOW=${MQ_BIN:-$SRC/build}
BEFORE=${MQ_BIN_BEFORE:-}
TMP=$(mktemp -d "${BENCH_DIR:-/var/tmp}/mq-pipes.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do pkill -KILL -P "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT

ms() { echo $(( $(date +%s%N) / 1000 )); }  # microseconds, despite the name
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
maxof() { sort -n | tail -n1; }
calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }
body=$(printf '%0100d' 7)

fill() {  # fill BIN STORE COUNT
  "$1/mq-admin" -s "$2" init >/dev/null
  "$1/mq-admin" -s "$2" create q >/dev/null 2>&1 || true
  "$1/mq-admin" -s "$2" create other >/dev/null 2>&1 || true
  awk -v n="$3" -v b="$body" 'BEGIN { for (i = 0; i < n; i++) print b }' | "$1/mq-send" -s "$2" -l q
}

# (1) drain
drain() {  # drain BIN: prints microseconds
  local s=$TMP/drain.$RANDOM t0
  fill "$1" "$s" "$N"
  sync
  t0=$(ms)
  "$1/mq-receive" -s "$s" q --all -l | cat >/dev/null
  echo $(( $(ms) - t0 ))
  rm -rf "$s"
}
for ((r = 0; r < ROUNDS; r++)); do
  drain "$NOW" >>"$TMP/drain.now"
  [ -z "$BEFORE" ] || drain "$BEFORE" >>"$TMP/drain.before"
done
d_now=$(median <"$TMP/drain.now")
printf '(1) drain of %d messages | cat: %s s (%s msg/s)\n' "$N" "$(calc "$d_now / 1000000")" \
  "$(calc "$N * 1000000 / $d_now")"
if [ -n "$BEFORE" ]; then
  d_before=$(median <"$TMP/drain.before")
  printf '    before: %s s; now/before = %s\n' "$(calc "$d_before / 1000000")" \
    "$(calc "$d_now / $d_before")"
fi

# (2) send latency, idle and with a stalled reader
S=$TMP/lat
fill "$NOW" "$S" $((N / 10))
sends() {  # sends FILE
  local i t0
  for ((i = 0; i < SENDS; i++)); do
    t0=$(ms)
    timeout 60 "$NOW/mq-send" -s "$S" other x
    echo $(( $(ms) - t0 )) >>"$1"
  done
}
sends "$TMP/idle"
( "$NOW/mq-receive" -s "$S" q --all -l | sleep 600 ) &
pids+=($!)
sleep 1
sends "$TMP/stalled"
idle=$(median <"$TMP/idle") stalled=$(median <"$TMP/stalled") worst=$(maxof <"$TMP/stalled")
printf '(2) mq-send to another queue: idle %d us; while a reader stalls %d us (max %d us); ratio %s\n' \
  "$idle" "$stalled" "$worst" "$(calc "$stalled / $idle")"

# (3) one receive per process
single() {  # single BIN STORE FILE
  local t0
  "$1/mq-send" -s "$2" q "$body"
  t0=$(ms)
  "$1/mq-receive" -s "$2" q >/dev/null
  echo $(( $(ms) - t0 )) >>"$3"
}
A=$TMP/single.now B=$TMP/single.before
fill "$NOW" "$A" 0
[ -z "$BEFORE" ] || fill "$BEFORE" "$B" 0
for ((i = 0; i < SINGLE; i++)); do
  single "$NOW" "$A" "$TMP/one.now"
  [ -z "$BEFORE" ] || single "$BEFORE" "$B" "$TMP/one.before"
done
o_now=$(median <"$TMP/one.now")
printf '(3) one mq-receive per process: %d us' "$o_now"
if [ -n "$BEFORE" ]; then
  o_before=$(median <"$TMP/one.before")
  printf '; before %d us; now/before = %s' "$o_before" "$(calc "$o_now / $o_before")"
fi
printf '\n'
