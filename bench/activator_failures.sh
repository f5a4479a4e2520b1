#!/usr/bin/env bash
# activator_failures.sh: an activator pool when some commands fail (issue 29). Messages per
# second through `mq-watch q --max-readers R --exec work.sh` for R = 1, 3 and 8, with no
# command failing and with one in ten failing once (exit 3 the first time it sees its
# message), next to the way without an activator: a shell loop of `mq-receive q --exec
# work.sh`, one process per message, until the queue is empty.
#
#   bench/activator_failures.sh [--quick] [-n N]
#
# N (messages per run) defaults to 1000; --quick sets it to 200. The queue has --max-retries
# 100; mq-watch's --retry-delay is its default (1 s), so a run with failures lasts at least
# that long. Time is taken from the start of the pool until work.sh has logged N successes.
# Environment: MQ_BIN (directory of built tools, default $SRC/build), BENCH_DIR (parent of
# the temporary directory, default /var/tmp).
set -euo pipefail

N=1000
while [ $# -gt 0 ]; do
  case $1 in
    --quick) N=200 ;;
    -n) N=${2:?-n needs a number}; shift ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
      exit 0 ;;
    *) echo "activator_failures.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "activator_failures.sh: -n wants a positive number" >&2; exit 2; }

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MQ_BIN=${MQ_BIN:-$SRC/build}
die() { printf 'activator_failures.sh: %s\n' "$*" >&2; exit 1; }
for t in mq-send mq-receive mq-watch mq-admin; do
  [ -x "$MQ_BIN/$t" ] || die "$MQ_BIN/$t is missing (build first, or set MQ_BIN)"
done
TMP=$(mktemp -d "${BENCH_DIR:-/var/tmp}/mq-activator-bench.XXXXXX")
WATCH_PID=
cleanup() {
  [ -n "$WATCH_PID" ] && kill -9 "$WATCH_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat >"$TMP/work.sh" <<'SH'
#!/bin/sh
body=$(cat)
case $body in
  *7) if [ -n "$FAIL_SEVENS" ] && mkdir "$WORK_DIR/seen.$body" 2>/dev/null; then exit 3; fi ;;
esac
echo "$body" >>"$WORK_DIR/done"
SH
chmod +x "$TMP/work.sh"
now_us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
done_count() { [ -f "$WORK_DIR/done" ] && wc -l <"$WORK_DIR/done" || echo 0; }

# setup NAME FAIL: a fresh store and work directory, N messages in q.
setup() {
  export WORK_DIR=$TMP/$1 FAIL_SEVENS=$2
  rm -rf "$WORK_DIR"
  mkdir -p "$WORK_DIR"
  STORE=$WORK_DIR/store
  "$MQ_BIN/mq-admin" -s "$STORE" init >/dev/null
  "$MQ_BIN/mq-admin" -s "$STORE" create q --max-retries 100 >/dev/null
  seq 1 "$N" | "$MQ_BIN/mq-send" -s "$STORE" -l q
}
report() {  # WHAT US
  awk -v n="$N" -v us="$2" -v w="$1" 'BEGIN {
    printf "    %-36s %8.0f messages/s  (%.2f s)\n", w, n / (us / 1e6), us / 1e6 }'
}

echo "mq activator under failures, N = $N"
echo "  date    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "  machine $(nproc) CPUs, Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  mq      $("$MQ_BIN/mq-send" --version 2>/dev/null || echo '?') ($MQ_BIN)"
for fail in "" 1; do
  echo
  [ -z "$fail" ] && echo "no command fails" || echo "one command in ten fails once"
  setup loop "$fail"
  t0=$(now_us)
  while [ "$(done_count)" -lt "$N" ]; do
    rc=0
    "$MQ_BIN/mq-receive" -s "$STORE" q --exec "$TMP/work.sh" 2>/dev/null || rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 8 ] || die "mq-receive --exec exited $rc"
  done
  report "shell loop of mq-receive --exec" $(($(now_us) - t0))
  for R in 1 3 8; do
    setup "watch$R" "$fail"
    t0=$(now_us)
    "$MQ_BIN/mq-watch" -s "$STORE" q --max-readers "$R" --exec "$TMP/work.sh" 2>/dev/null &
    WATCH_PID=$!
    deadline=$((SECONDS + 600))
    while [ "$(done_count)" -lt "$N" ]; do
      ((SECONDS < deadline)) || die "mq-watch processed $(done_count) of $N in 600 s"
      sleep 0.02
    done
    t1=$(now_us)
    kill -TERM "$WATCH_PID"
    wait "$WATCH_PID" || die "mq-watch exited $? on SIGTERM"
    WATCH_PID=
    report "mq-watch --max-readers $R" $((t1 - t0))
  done
done
