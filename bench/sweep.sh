#!/usr/bin/env bash
# sweep.sh: the cost of `mq-admin sweep` (issue 6): it walks the deadline index, never a queue,
# so with nothing due it must take milliseconds whatever the depth. Prints the median time of
# one `mq-admin sweep` process:
#
#   (1) on an empty store (the process floor: start, open, look),
#   (2) on a queue of 1,000 messages with a ttbr of one hour (nothing due),
#   (3) on a queue of 1,000,000 such messages (nothing due),
#   (4) on that queue when 1,000 of them are due (they are dead-lettered),
# and, for a user's alternative, sqlite3 deleting expired rows of a 1,000,000-row table with
# and without an index on the expiry column (`DELETE ... WHERE expires < now`).
#
#   bench/sweep.sh [--quick]        (--quick: 100,000 instead of 1,000,000)
#
# Environment: BENCH_DIR (default /var/tmp), MQ_BIN (default $SRC/build, built if missing),
# SWEEP_RUNS (timed sweeps per case, default 30). Needs gcc (for bench/c/rep.c) and sqlite3.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=1000000
[ "${1:-}" = --quick ] && N=100000
RUNS=${SWEEP_RUNS:-30}
MQ_BIN=${MQ_BIN:-$SRC/build}
if [ ! -x "$MQ_BIN/mq-admin" ]; then
  "$SRC/scripts/build.sh" "$MQ_BIN" >&2
fi
command -v sqlite3 >/dev/null || { echo "sweep.sh: needs sqlite3 (apt install sqlite3)" >&2; exit 1; }
TMP=$(mktemp -d "${BENCH_DIR:-/var/tmp}/mq-sweep.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
gcc -O2 "$SRC/bench/c/rep.c" -o "$TMP/rep"
PATH=$MQ_BIN:$PATH

# median_ms CMD...: the median wall time of $RUNS runs of CMD, in ms.
median_ms() {
  "$TMP/rep" 3 -- "$@" >/dev/null
  "$TMP/rep" "$RUNS" -- "$@" | awk '{ printf "%.3f", $3 / 1e6 }'
}

fill() {  # fill STORE COUNT TTBR
  mq-admin -s "$1" init
  mq-admin -s "$1" create q
  seq "$2" | mq-send -s "$1" q -l --ttbr "$3"
}

mq-admin -s "$TMP/empty" init
t_empty=$(median_ms mq-admin -s "$TMP/empty" sweep)
fill "$TMP/small" 1000 1h
t_small=$(median_ms mq-admin -s "$TMP/small" sweep)
start=$(date +%s%N)
fill "$TMP/big" "$N" 1h
fill_s=$(awk -v ns=$(( $(date +%s%N) - start )) 'BEGIN { printf "%.1f", ns / 1e9 }')
t_big=$(median_ms mq-admin -s "$TMP/big" sweep)
[ "$(mq-admin -s "$TMP/big" stat q --json | jq .messages)" = "$N" ] || { echo "sweep.sh: sweep removed unexpired messages" >&2; exit 1; }
# 1,000 due among N: one sweep dead-letters them; time that one.
seq 1000 | mq-send -s "$TMP/big" q -l --ttbr 1ms --deadletter
sleep 0.1
t_due=$("$TMP/rep" 1 -- mq-admin -s "$TMP/big" sweep | awk '{ printf "%.3f", $3 / 1e6 }')
[ "$(mq-admin -s "$TMP/big" stat 'system;deadletter' --json | jq .messages)" = 1000 ] || { echo "sweep.sh: the due messages were not dead-lettered" >&2; exit 1; }

# sqlite3: the same N rows, the expiry in the future; delete what expired.
now=$(date +%s)
sqlite_case() {  # sqlite_case DB INDEX(0/1)
  sqlite3 "$1" "PRAGMA journal_mode=WAL; CREATE TABLE q(id INTEGER PRIMARY KEY, body TEXT, expires INTEGER);" >/dev/null
  [ "$2" = 1 ] && sqlite3 "$1" "CREATE INDEX q_exp ON q(expires);"
  sqlite3 "$1" "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $N)
                INSERT INTO q(body, expires) SELECT x, $now + 3600 FROM c;"
  median_ms sqlite3 "$1" "DELETE FROM q WHERE expires < $now;"
}
t_sql_idx=$(sqlite_case "$TMP/idx.db" 1)
t_sql_scan=$(sqlite_case "$TMP/scan.db" 0)

printf 'mq-admin sweep, median of %d runs (filled %d messages in %s s)\n' "$RUNS" "$N" "$fill_s"
printf '  %-46s %9s ms\n' "empty store" "$t_empty"
printf '  %-46s %9s ms\n' "1,000 messages, none due" "$t_small"
printf '  %-46s %9s ms\n' "$N messages, none due" "$t_big"
printf '  %-46s %9s ms (one run)\n' "$N messages, 1,000 due (dead-lettered)" "$t_due"
printf '  %-46s %9s ms\n' "sqlite3 DELETE expired, indexed, $N rows" "$t_sql_idx"
printf '  %-46s %9s ms\n' "sqlite3 DELETE expired, no index, $N rows" "$t_sql_scan"
awk -v a="$t_big" -v b="$t_small" -v e="$t_empty" 'BEGIN {
  printf "ratio %s-deep / 1,000-deep: %.2fx; over the empty-store floor: %.3f ms\n", "N", a / b, a - e }'
