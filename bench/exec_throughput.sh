#!/usr/bin/env bash
# exec_throughput.sh: the cost of transactional receives with a command per message.
#
#   (a) mq-receive q --all --exec true over N messages (one transaction and one `true` per
#       message) vs xargs -n1 true over N items (the same number of process starts, no
#       queue): milliseconds per item and the ratio
#   (b) mq-watch q --max-readers R --exec true draining N messages, R = 1..4: messages/s from
#       the start of mq-watch until the queue is empty (polled every 20 ms)
#
#   bench/exec_throughput.sh [--quick] [-n N]
#
# N defaults to 2000; --quick sets it to 200. Environment: MQ_BIN (directory of built tools,
# default $SRC/build, built if missing), BENCH_DIR (parent of the temporary directory, default
# /var/tmp; the stores live there, so its disk's fsync time counts), BENCH_ROUNDS (rounds of
# (a), the median is shown; default 3).
set -euo pipefail

N=2000
while [ $# -gt 0 ]; do
  case $1 in
    --quick) N=200 ;;
    -n) N=${2:?-n needs a number}; shift ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
      exit 0 ;;
    *) echo "exec_throughput.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "exec_throughput.sh: -n wants a positive number" >&2; exit 2; }
ROUNDS=${BENCH_ROUNDS:-3}

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '%s\n' "$*" >&2; }
die() { say "exec_throughput.sh: $*"; exit 1; }

if [ -z "${MQ_BIN:-}" ]; then
  MQ_BIN=$SRC/build
  if [ ! -x "$MQ_BIN/mq-watch" ]; then
    say "building mq in $MQ_BIN"
    cmake -S "$SRC" -B "$MQ_BIN" >/dev/null && cmake --build "$MQ_BIN" -j "$(nproc)" >/dev/null ||
      die "building mq failed"
  fi
fi
for t in mq-send mq-receive mq-watch mq-admin; do [ -x "$MQ_BIN/$t" ] || die "$MQ_BIN/$t is missing"; done
TRUE=$(command -v true 2>/dev/null)
[ -x "$TRUE" ] || TRUE=/bin/true   # `command -v true` names the builtin
[ "$TRUE" = true ] && TRUE=/bin/true

BASE=${BENCH_DIR:-/var/tmp}
TMP=$(mktemp -d "$BASE/mq-exec-bench.XXXXXX")
WATCH_PID=
cleanup() {
  [ -n "$WATCH_PID" ] && kill -9 "$WATCH_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
count() { "$MQ_BIN/mq-admin" -s "$1" stat q --json | sed -n 's/.*"messages":\([0-9]*\).*/\1/p'; }
# fill STORE: a new store whose queue q holds N messages.
fill() {
  rm -rf "$1"
  "$MQ_BIN/mq-admin" -s "$1" init >/dev/null
  "$MQ_BIN/mq-admin" -s "$1" create q --max-retries 0 >/dev/null
  seq -f 'message %g' "$N" | "$MQ_BIN/mq-send" -s "$1" -l q
  [ "$(count "$1")" = "$N" ] || die "could not fill the queue"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "mq exec throughput, N = $N"
echo "  date    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "  machine $(nproc) CPUs, Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  stores  $TMP: $(df -PT "$TMP" | awk 'NR == 2 { print $2 " on " $1 }')"
echo "  mq      $("$MQ_BIN/mq-send" --version 2>/dev/null || echo '?') ($MQ_BIN)"
echo

# --- (a) ---------------------------------------------------------------------------------------
: >"$TMP/mq.us"
: >"$TMP/xargs.us"
for ((r = 0; r < ROUNDS; r++)); do
  fill "$TMP/a"
  t0=$(now_us)
  "$MQ_BIN/mq-receive" -s "$TMP/a" q --all --exec "$TRUE" || die "mq-receive --exec failed"
  t1=$(now_us)
  [ "$(count "$TMP/a")" = 0 ] || die "mq-receive --all --exec left messages"
  echo $((t1 - t0)) >>"$TMP/mq.us"
  seq "$N" >"$TMP/items"
  t0=$(now_us)
  xargs -n1 "$TRUE" <"$TMP/items"
  t1=$(now_us)
  echo $((t1 - t0)) >>"$TMP/xargs.us"
done
mq_us=$(median <"$TMP/mq.us")
xa_us=$(median <"$TMP/xargs.us")
awk -v n="$N" -v m="$mq_us" -v x="$xa_us" -v r="$ROUNDS" 'BEGIN {
  printf "(a) one process per item, %d items (median of %d rounds)\n", n, r
  printf "    %-40s %8.3f ms/item  %8.0f items/s\n", "mq-receive --all --exec true", m / n / 1000, n / (m / 1e6)
  printf "    %-40s %8.3f ms/item  %8.0f items/s\n", "xargs -n1 true", x / n / 1000, n / (x / 1e6)
  printf "    %-40s %8.2fx (transaction cost %.3f ms/item)\n", "ratio mq / xargs", m / x, (m - x) / n / 1000 }'
echo

# --- (b) ---------------------------------------------------------------------------------------
echo "(b) mq-watch --max-readers R --exec true draining $N messages"
for R in 1 2 3 4; do
  fill "$TMP/b"
  t0=$(now_us)
  "$MQ_BIN/mq-watch" -s "$TMP/b" q --max-readers "$R" --exec "$TRUE" &
  WATCH_PID=$!
  deadline=$((SECONDS + 600))
  while [ "$(count "$TMP/b")" != 0 ]; do
    ((SECONDS < deadline)) || die "mq-watch did not drain the queue in 600 s"
    kill -0 "$WATCH_PID" 2>/dev/null || die "mq-watch exited early"
    sleep 0.02   # one mq-admin stat per 20 ms: little load, 20 ms resolution
  done
  t1=$(now_us)
  kill -TERM "$WATCH_PID"
  wait "$WATCH_PID" || die "mq-watch exited $? on SIGTERM"
  WATCH_PID=
  awk -v n="$N" -v us=$((t1 - t0)) -v r="$R" 'BEGIN {
    printf "    max-readers %d  %8.0f messages/s  (%.3f ms/message, %.2f s)\n", r, n / (us / 1e6), us / n / 1000, us / 1e6 }'
done
