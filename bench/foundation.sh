#!/usr/bin/env bash
# foundation.sh: mq's foundation benchmark. Compares the mq tools with the C floor (raw LMDB,
# statically linked) and with the sqlite3 command-line tool, all on the same disk, and prints
# one table with ratios against the targets of the foundation issue:
#
#   (a) single durable sends, one process per message: mq-send vs C floor vs sqlite3
#   (a2) single durable receives, one process per message: mq-receive vs the C floor's pop
#       (floor -p) vs sqlite3 DELETE .. RETURNING, and vs the floor of a receive that holds no
#       transaction across its output (floor -P: two commits, as mq-receive's)
#   (b) bulk send of 1,000,000 100-byte lines: mq-send -l vs raw LMDB loop vs sqlite3 .import
#   (c) drain of those 1,000,000 messages: mq-receive --all vs raw LMDB loop vs sqlite3, and
#       vs the same LMDB work as mq's (rawbulk drain1r, store format 4: the record keyed by its
#       order key, one B-tree delete a message, a batch's Locked marks one range) and as
#       format 3's (drain3: records, order and Locked marks in three trees)
#   (d) head of a queue at depth 1,000 vs 10,000,000: time, peak RSS, page faults and peak heap
#       of mq-receive/mq-peek
#   (e) the source: the largest files; with --build-time, a full build of the tools and tests
#       into a fresh directory, timed (and of the git revision BENCH_BUILD_BEFORE if set, in a
#       temporary worktree, for the ratio)
#
#   bench/foundation.sh [--quick] [--build-time]
#
# --quick divides the big numbers by 10 (1M -> 100k, 10M -> 1M) for a smoke test.
# Environment: BENCH_DIR   parent of the temporary directory (default /var/tmp); everything
#                          is made in one directory there and removed at the end
#              MQ_BIN      directory of already built mq tools (default: build $SRC/build)
#              BENCH_ROUNDS rounds of (b) and (c), the median is shown (default 3)
#
# Needs (Debian 12): build-essential, liblmdb-dev (liblmdb.a and lmdb.h), sqlite3, and cmake
# plus the project's build dependencies to build mq; strace (optional) for the heap row of
# (d). Nothing else: times and peak RSS are
# taken by bench/c/rep.c (posix_spawn + wait4 + CLOCK_MONOTONIC), not by time(1)/hyperfine.
# The full run needs about 4 GB free in BENCH_DIR and takes a few minutes.
set -euo pipefail

QUICK=0 BUILD_TIME=0
for arg in "$@"; do
  case $arg in
    --quick) QUICK=1 ;;
    --build-time) BUILD_TIME=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
      exit 0
      ;;
    *)
      echo "foundation.sh: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

SINGLE=1000          # (a) invocations per tool
BULK=1000000         # (b), (c) messages
BIG=10000000         # (d) depth of the big queue
SMALL=1000           # (d) depth of the small queue
HEAD_RUNS=50         # (d) measured invocations per depth
ROUNDS=${BENCH_ROUNDS:-3}
if [ "$QUICK" = 1 ]; then
  BULK=$((BULK / 10))
  BIG=$((BIG / 10))
fi
BODY=$(printf '%0100d' 4242)  # the 100-byte body of (a) and the refills of (d)

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_SRC=$SRC/bench/c

say() { printf '%s\n' "$*" >&2; }
die() {
  say "foundation.sh: $*"
  exit 1
}

# --- prerequisites ----------------------------------------------------------------------------
missing_pkgs=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing_pkgs+=("$2"); }
need_cmd gcc build-essential
need_cmd sqlite3 sqlite3
need_cmd awk mawk
if command -v gcc >/dev/null 2>&1; then
  [ -f "$(gcc -print-file-name=liblmdb.a)" ] || missing_pkgs+=(liblmdb-dev)
  [ -f "$(gcc -print-file-name=libc.a)" ] || missing_pkgs+=(libc6-dev)
fi
[ -n "${MQ_BIN:-}" ] || need_cmd cmake cmake
if [ ${#missing_pkgs[@]} -gt 0 ]; then
  mapfile -t missing_pkgs < <(printf '%s\n' "${missing_pkgs[@]}" | sort -u)
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing_pkgs[*]}"
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" >&2
  else
    die "missing packages; install them with: sudo apt-get install ${missing_pkgs[*]}"
  fi
fi

# --- the temporary directory, removed at exit -------------------------------------------------
BASE=${BENCH_DIR:-/var/tmp}
[ -d "$BASE" ] || die "BENCH_DIR $BASE is not a directory"
TMP=$(mktemp -d "$BASE/mq-bench.XXXXXX")
cleanup() { rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need_kb=$((BULK * 11 / 10 + BIG * 26 / 100 + 300000))  # KiB: ~1.1 KiB/bulk message, ~0.26 KiB/deep one
avail_kb=$(df -Pk "$TMP" | awk 'NR == 2 { print $4 }')
[ "$avail_kb" -ge "$need_kb" ] ||
  die "$BASE has $((avail_kb / 1024)) MiB free, the run needs about $((need_kb / 1024)) MiB (set BENCH_DIR)"

# --- build ------------------------------------------------------------------------------------
BIN=$TMP/bin
mkdir -p "$BIN"
if [ -z "${MQ_BIN:-}" ]; then
  MQ_BIN=$SRC/build
  say "building mq in $MQ_BIN"
  if [ ! -f "$MQ_BIN/CMakeCache.txt" ]; then
    # As scripts/build.sh configures it.
    cmake -S "$SRC" -B "$MQ_BIN" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$TMP/build.log" 2>&1 ||
      { cat "$TMP/build.log" >&2; die "cmake failed"; }
  fi
  cmake --build "$MQ_BIN" -j "$(nproc)" --target mq-send mq-receive mq-peek mq-admin \
    >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log" >&2; die "building mq failed"; }
fi
for t in mq-send mq-receive mq-peek mq-admin; do
  [ -x "$MQ_BIN/$t" ] || die "$MQ_BIN/$t is missing"
done
SEND=$MQ_BIN/mq-send RECV=$MQ_BIN/mq-receive PEEK=$MQ_BIN/mq-peek ADMIN=$MQ_BIN/mq-admin

say "building the C baselines"
for p in floor rawbulk noop; do
  # The floor as the issue defines it: gcc -O2 -static floor.c -llmdb -lpthread.
  gcc -O2 -static "$BENCH_SRC/$p.c" -o "$BIN/$p" -llmdb -lpthread 2>"$TMP/cc.log" ||
    { cat "$TMP/cc.log" >&2; die "cannot link $p.c statically against liblmdb.a"; }
done
gcc -O2 "$BENCH_SRC/rep.c" -o "$BIN/rep" || die "cannot build rep.c"
REP=$BIN/rep
SQL=(sqlite3 -batch -init /dev/null)  # no ~/.sqliterc

# --- helpers ----------------------------------------------------------------------------------
# stats FILE: "count mean median min max" of the numbers in FILE (one a line).
stats() {
  sort -n "$1" | awk '{ v[NR] = $1; s += $1 }
    END { if (NR == 0) { print "0 0 0 0 0"; exit }
          m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "%d %.0f %.0f %.0f %.0f\n", NR, s / NR, m, v[1], v[NR] }'
}
field() { stats "$1" | awk -v f="$2" '{ print $f }'; }
mean_of() { field "$1" 2; }
median_of() { field "$1" 3; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
commas() { printf '%s' "$1" | sed -e ':a' -e 's/\B[0-9]\{3\}\>/,&/' -e 'ta'; }
# verdict X OP Y: "ok" if X OP Y holds, else "MISS".
verdict() { awk -v x="$1" -v y="$3" -v op="$2" 'BEGIN {
  ok = (op == "<=") ? x <= y : (op == ">=") ? x >= y : 0; print ok ? "ok" : "MISS" }'; }
note_fail() { printf '%s\n' "$2" >>"$TMP/$1.fail"; }
fails_of() { if [ -f "$TMP/$1.fail" ]; then wc -l <"$TMP/$1.fail"; else echo 0; fi; }
first_fail() { if [ -f "$TMP/$1.fail" ]; then head -n 1 "$TMP/$1.fail"; fi; }

# timed NAME [rep options] -- COMMAND...: one timed run; its ns go to $TMP/NAME.ns and its
# peak RSS (KiB) to $TMP/NAME.rss. A failed run is noted in $TMP/NAME.fail (with the first
# line of its stderr) and returns 1.
timed() {
  local name=$1 out
  shift
  if out=$("$REP" 1 "$@" 2>"$TMP/err"); then
    printf '%s\n' "$out" | awk '{ print $3 }' >>"$TMP/$name.ns"
    printf '%s\n' "$out" | awk '{ print $6 }' >>"$TMP/$name.rss"
    printf '%s\n' "$out" | awk '{ print $8 }' >>"$TMP/$name.flt"
    return 0
  fi
  note_fail "$name" "$(grep -v '^rep: ' "$TMP/err" | head -n 1)"
  return 1
}

mq_count() {  # mq_count STORE QUEUE
  "$ADMIN" -s "$1" stat --json "$2" | sed -n 's/.*"messages":\([0-9]*\).*/\1/p'
}
sq_count() { "${SQL[@]}" "$1" 'SELECT count(*) FROM q;'; }
check_count() {  # check_count NAME GOT WANT
  [ "$2" = "$3" ] || note_fail "$1" "expected $3 messages, found $2"
}
new_store() {  # new_store DIR: an mq store with an empty queue q
  "$ADMIN" -s "$1" init >/dev/null
  "$ADMIN" -s "$1" create q >/dev/null
}
new_sqlite() {  # new_sqlite FILE: WAL journal (persistent, set once) and a one-column table
  "${SQL[@]}" "$1" 'PRAGMA journal_mode=WAL; CREATE TABLE q(body BLOB);' >/dev/null
}

# --- header -----------------------------------------------------------------------------------
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
fs=$(df -PT "$TMP" | awk 'NR == 2 { print $2 " on " $1 " (mounted on " $7 ")" }')
mq_version=$("$SEND" --version 2>/dev/null || echo '?')
if [ "$MQ_BIN" = "$SRC/build" ]; then
  mq_from="git $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')"
  [ -z "$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null || true)" ] ||
    mq_from="$mq_from + uncommitted changes"
else
  mq_from="prebuilt"
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$MQ_BIN/CMakeCache.txt" 2>/dev/null || true)
mq_from="$mq_from, CMAKE_BUILD_TYPE ${build_type:-unset (CMakeLists default)}"
# Linked by ld.lld in cmd/startup-order.txt's order, or not (CMakeLists.txt: without lld the
# static tools start slower, which (a) and (a2) show).
if readelf -p .comment "$SEND" 2>/dev/null | grep -q 'Linker:.*LLD'; then
  mq_link="ld.lld, start-up order of cmd/startup-order.txt"
else
  mq_link="default linker order (no ld.lld: see README.md, Build)"
fi
lmdb_version=$(dpkg-query -W -f '${Version}' liblmdb-dev 2>/dev/null || echo '?')
sqlite_version=$(sqlite3 --version | awk '{ print $1 }')

echo "mq foundation benchmark$([ "$QUICK" = 1 ] && echo ' (--quick: big numbers / 10)')"
echo "  date      $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "  machine   $(nproc) CPUs${cpu:+ ($cpu)}, ${mem:-? GiB} RAM, Linux $(uname -r)"
echo "  bench dir $TMP: ${fs}"
echo "  mq        $mq_version ($mq_from, $MQ_BIN)"
echo "  linked    $mq_link"
echo "  others    sqlite3 $sqlite_version, liblmdb $lmdb_version, $(gcc --version | head -n 1)"
load_start=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
echo "  load      $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') at the start (other work on the machine skews fsync times)"
echo

# --- (a) single sends -------------------------------------------------------------------------
say "(a) single sends: $SINGLE invocations per tool, interleaved in 10 rounds"
A=$TMP/a
mkdir -p "$A/floor" "$A/floor-n"
"$BIN/floor" "$A/floor" --init
"$BIN/floor" "$A/floor-n" --init
new_store "$A/mq"
new_store "$A/mq-x"
new_sqlite "$A/sq.db"

a_cmd() {  # the command line of one tool of (a), in the array CMD
  case $1 in
    floor) CMD=("$BIN/floor" "$A/floor" "$BODY") ;;
    mq) CMD=("$SEND" -s "$A/mq" q "$BODY") ;;
    sqlite) CMD=("${SQL[@]}" "$A/sq.db" "PRAGMA synchronous=FULL; INSERT INTO q(body) VALUES('$BODY');") ;;
    floor-n) CMD=("$BIN/floor" -n "$A/floor-n" "$BODY") ;;
    mq-x) CMD=("$SEND" --express -s "$A/mq-x" q "$BODY") ;;
    noop) CMD=("$BIN/noop") ;;
    # CLI11 answers --version by throwing; the first throw in a static binary sorts its
    # unwind tables (about 0.4 ms), which no send pays: an upper bound of the start-up.
    mq-version) CMD=("$SEND" --version) ;;
  esac
}
A_TOOLS=(floor mq sqlite floor-n mq-x noop mq-version)
for t in "${A_TOOLS[@]}"; do  # warm-up, not counted
  a_cmd "$t"
  "$REP" 20 -- "${CMD[@]}" >/dev/null
done
per=$((SINGLE / 10))
for round in 0 1 2 3 4 5 6 7 8 9; do
  n=${#A_TOOLS[@]}
  for ((i = 0; i < n; i++)); do
    t=${A_TOOLS[$(((i + round) % n))]}
    a_cmd "$t"
    "$REP" "$per" -s "$A/$t.ns" -- "${CMD[@]}" >/dev/null
  done
done
check_count a-mq "$(mq_count "$A/mq" q)" $((per * 10 + 20))
check_count a-sqlite "$(sq_count "$A/sq.db")" $((per * 10 + 20))

a_row() {  # a_row TOOL LABEL
  local mean med
  mean=$(mean_of "$A/$1.ns")
  med=$(median_of "$A/$1.ns")
  printf '  %-44s %10s %10s %9s\n' "$2" "$(calc %.3f "$mean / 1e6")" "$(calc %.3f "$med / 1e6")" \
    "$(commas "$(calc %.0f "1e9 / $mean")")"
}
a_mean() { mean_of "$A/$1.ns"; }
r_mf=$(calc %.2f "$(a_mean mq) / $(a_mean floor)")
r_sm=$(calc %.2f "$(a_mean sqlite) / $(a_mean mq)")
r_mf_med=$(calc %.2f "$(median_of "$A/mq.ns") / $(median_of "$A/floor.ns")")
r_sm_med=$(calc %.2f "$(median_of "$A/sqlite.ns") / $(median_of "$A/mq.ns")")

echo "(a) single sends: $(commas $((per * 10))) invocations each, one 100-byte message per process"
printf '  %-44s %10s %10s %9s\n' "" "mean ms" "median ms" "ops/s"
a_row floor "C floor (static; 1 put + synced commit)"
a_row mq "mq-send QUEUE BODY (durable)"
a_row sqlite "sqlite3 CLI (WAL, synchronous=FULL, 1 INSERT)"
printf '  %-44s %9sx %9sx %9s  target <= 1.3x: %s (mean), %s (median)\n' "ratio mq/floor" \
  "$r_mf" "$r_mf_med" "" "$(verdict "$r_mf" '<=' 1.3)" "$(verdict "$r_mf_med" '<=' 1.3)"
printf '  %-44s %9sx %9sx %9s  target >= 2x:   %s (mean), %s (median)\n' "ratio sqlite3/mq" \
  "$r_sm" "$r_sm_med" "" "$(verdict "$r_sm" '>=' 2)" "$(verdict "$r_sm_med" '>=' 2)"
echo "  where the time goes (same rounds):"
a_row floor-n "C floor -n (MDB_NOSYNC: no fdatasync)"
a_row mq-x "mq-send --express (data synced, meta not)"
a_row noop "static C no-op (process start/exit only)"
a_row mq-version "mq-send --version (start-up, CLI11, a throw)"
printf '  %-44s %10s\n' "sync share: floor all / mq meta page (ms)" \
  "$(calc %.3f "($(a_mean floor) - $(a_mean floor-n)) / 1e6") / $(calc %.3f "($(a_mean mq) - $(a_mean mq-x)) / 1e6")"
printf '  %-44s %9sx %9sx\n' "ratio mq-send --express / floor -n" \
  "$(calc %.2f "$(a_mean mq-x) / $(a_mean floor-n)")" \
  "$(calc %.2f "$(median_of "$A/mq-x.ns") / $(median_of "$A/floor-n.ns")")"
printf '  %-44s %10s\n' "start-up over static no-op, mq-send (ms)" \
  "$(calc %.3f "($(a_mean mq-version) - $(a_mean noop)) / 1e6")"
for t in a-mq a-sqlite; do
  [ "$(fails_of "$t")" = 0 ] || echo "  WARNING $t: $(first_fail "$t")"
done
echo

# --- (a2) single receives ---------------------------------------------------------------------
say "(a2) single receives: $SINGLE invocations per tool, interleaved in 10 rounds"
# Each store holds more than every round takes, so no receive finds it empty.
fill=$((SINGLE + 100))
rm -rf "$A/floor" "$A/floor-P"
mkdir -p "$A/floor" "$A/floor-P"
"$BIN/rawbulk" fill "$A/floor" "$fill" 1000
"$BIN/rawbulk" fill "$A/floor-P" "$fill" 1000
awk -v n="$fill" 'BEGIN { for (i = 1; i <= n; i++) printf "%0100d\n", i }' >"$A/lines"
rm -rf "$A/mq" "$A"/sq.db*
new_store "$A/mq"
new_sqlite "$A/sq.db"
"$SEND" -l -s "$A/mq" q <"$A/lines"
"${SQL[@]}" "$A/sq.db" ".import --csv \"$A/lines\" q"
r_cmd() {  # the command line of one tool of (a2), in the array CMD
  case $1 in
    floor) CMD=("$BIN/floor" -p "$A/floor") ;;
    floor-P) CMD=("$BIN/floor" -P "$A/floor-P") ;;
    mq) CMD=("$RECV" -s "$A/mq" q) ;;
    sqlite) CMD=("${SQL[@]}" "$A/sq.db" "PRAGMA synchronous=FULL; DELETE FROM q WHERE rowid = (SELECT min(rowid) FROM q) RETURNING body;") ;;
  esac
}
R_TOOLS=(floor mq sqlite floor-P)
for t in "${R_TOOLS[@]}"; do  # warm-up, not counted
  r_cmd "$t"
  "$REP" 20 -o /dev/null -- "${CMD[@]}" >/dev/null || note_fail "r-$t" "warm-up failed"
done
for round in 0 1 2 3 4 5 6 7 8 9; do
  n=${#R_TOOLS[@]}
  for ((i = 0; i < n; i++)); do
    t=${R_TOOLS[$(((i + round) % n))]}
    r_cmd "$t"
    "$REP" "$per" -o /dev/null -s "$A/r-$t.ns" -- "${CMD[@]}" >/dev/null || note_fail "r-$t" "a run failed"
  done
done
check_count r-mq "$(mq_count "$A/mq" q)" $((fill - per * 10 - 20))
r_row() { a_row "r-$1" "$2"; }
r_rf=$(calc %.2f "$(a_mean r-mq) / $(a_mean r-floor)")
r_rf_med=$(calc %.2f "$(median_of "$A/r-mq.ns") / $(median_of "$A/r-floor.ns")")
r_sr=$(calc %.2f "$(a_mean r-sqlite) / $(a_mean r-mq)")
r_sr_med=$(calc %.2f "$(median_of "$A/r-sqlite.ns") / $(median_of "$A/r-mq.ns")")
echo "(a2) single receives: $(commas $((per * 10))) invocations each, one 100-byte message per process"
printf '  %-44s %10s %10s %9s\n' "" "mean ms" "median ms" "ops/s"
r_row floor "C floor -p (static; first+read+del, synced)"
r_row mq "mq-receive QUEUE (durable)"
r_row sqlite "sqlite3 CLI (DELETE .. RETURNING, sync=FULL)"
r_row floor-P "C floor -P (mark, write, delete: 2 commits)"
printf '  %-44s %9sx %9sx %9s  target <= 1.3x: %s (mean), %s (median)\n' "ratio mq/floor" \
  "$r_rf" "$r_rf_med" "" "$(verdict "$r_rf" '<=' 1.3)" "$(verdict "$r_rf_med" '<=' 1.3)"
# floor -p writes its output inside its write transaction; mq-receive may not (a stalled reader
# would stop every writer), so it commits twice, as floor -P does: this ratio is what mq adds.
printf '  %-44s %9sx %9sx\n' "ratio mq/floor -P (no transaction across output)" \
  "$(calc %.2f "$(a_mean r-mq) / $(a_mean r-floor-P)")" \
  "$(calc %.2f "$(median_of "$A/r-mq.ns") / $(median_of "$A/r-floor-P.ns")")"
printf '  %-44s %9sx %9sx\n' "ratio sqlite3/mq" "$r_sr" "$r_sr_med"
for t in r-floor r-mq r-sqlite r-floor-P; do
  [ "$(fails_of "$t")" = 0 ] || echo "  WARNING $t: $(first_fail "$t")"
done
echo
rm -rf "$A"

# --- (b) bulk send and (c) drain --------------------------------------------------------------
say "(b, c) bulk send and drain of $BULK messages, $ROUNDS rounds"
BC=$TMP/bc
mkdir -p "$BC"
LINES=$BC/lines.txt
awk -v n="$BULK" 'BEGIN { for (i = 1; i <= n; i++) printf "%0100d\n", i }' >"$LINES"
DEL=$BC/delete.sql  # sqlite3 drain: batches of 1000 rows, each DELETE its own synced transaction
{
  echo "PRAGMA synchronous=FULL;"
  awk -v n=$(((BULK + 999) / 1000)) 'BEGIN { for (i = 0; i < n; i++)
    print "DELETE FROM q WHERE rowid IN (SELECT rowid FROM q ORDER BY rowid LIMIT 1000) RETURNING body;" }'
} >"$DEL"

for ((round = 1; round <= ROUNDS; round++)); do
  say "  round $round of $ROUNDS"
  rm -rf "$BC/raw" "$BC/raw10k" "$BC/mq" "$BC"/sq.db*
  mkdir -p "$BC/raw" "$BC/raw10k"
  new_store "$BC/mq"
  new_sqlite "$BC/sq.db"
  sync
  timed b-raw -- "$BIN/rawbulk" fill "$BC/raw" "$BULK" 1000 || true
  sync
  timed b-raw10k -- "$BIN/rawbulk" fill "$BC/raw10k" "$BULK" 10000 || true
  sync
  timed b-mq -i "$LINES" -- "$SEND" -l -s "$BC/mq" q || true
  sync
  timed b-sqlite -- "${SQL[@]}" "$BC/sq.db" "PRAGMA synchronous=FULL" ".import --csv \"$LINES\" q" || true
  check_count b-mq "$(mq_count "$BC/mq" q)" "$BULK"
  check_count b-sqlite "$(sq_count "$BC/sq.db")" "$BULK"
  size_mq=$(du -sk "$BC/mq" | awk '{ print $1 }')
  size_raw=$(du -sk "$BC/raw" | awk '{ print $1 }')
  size_sq=$(du -skc "$BC"/sq.db* | awk 'END { print $1 }')
  sync
  timed c-raw -- "$BIN/rawbulk" drain "$BC/raw" "$BULK" 1000 || true
  sync
  timed c-raw4k -- "$BIN/rawbulk" drain "$BC/raw10k" "$BULK" 4000 || true
  sync
  rm -rf "$BC/raw" "$BC/raw10k"
  # mq's layout (format 4: one tree, a batch's Locked marks one range) and format 3's
  # (c-layout, c-layout3)
  for l in 1r 3; do
    mkdir -p "$BC/layout"
    "$BIN/rawbulk" "fill${l%r}" "$BC/layout" "$BULK"
    sync
    timed "c-layout${l#1r}" -- "$BIN/rawbulk" "drain$l" "$BC/layout" "$BULK" 4000 || true
    rm -rf "$BC/layout"
  done
  sync
  timed c-mq -- "$RECV" --all -0 -s "$BC/mq" q && check_count c-mq "$(mq_count "$BC/mq" q)" 0
  sync
  timed c-sqlite -i "$DEL" -- "${SQL[@]}" "$BC/sq.db" && check_count c-sqlite "$(sq_count "$BC/sq.db")" 0
done
rm -rf "$BC"

bc_rate() { [ -s "$TMP/$1.ns" ] && calc %.0f "$BULK / ($(median_of "$TMP/$1.ns") / 1e9)" || echo 0; }
bc_row() {  # bc_row NAME LABEL
  local fails med
  fails=$(fails_of "$1")
  if [ -s "$TMP/$1.ns" ]; then
    med=$(median_of "$TMP/$1.ns")
    printf '  %-52s %8s %12s  %s\n' "$2" "$(calc %.3f "$med / 1e9")" "$(commas "$(bc_rate "$1")")" \
      "$([ "$fails" = 0 ] || echo "$fails of $ROUNDS runs FAILED: $(first_fail "$1")")"
  else
    printf '  %-52s %8s %12s  %s\n' "$2" "-" "-" "all runs FAILED: $(first_fail "$1")"
  fi
}
ratio_rate() { awk -v a="$(bc_rate "$1")" -v b="$(bc_rate "$2")" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }

echo "(b) bulk send: $(commas "$BULK") lines of 100 bytes, median of $ROUNDS runs, page cache warm"
printf '  %-52s %8s %12s\n' "" "seconds" "messages/s"
bc_row b-raw "raw LMDB loop (C; 1,000 puts per synced commit)"
bc_row b-mq "mq-send -l (durable; 10,000 messages per commit)"
bc_row b-sqlite "sqlite3 .import --csv (WAL, sync=FULL, 1 txn)"
bc_row b-raw10k "raw LMDB loop, 10,000 puts per commit (info)"
r=$(ratio_rate b-mq b-raw)
printf '  %-52s %8s  target >= 0.9x: %s\n' "ratio mq/raw (1,000 per commit)" "${r}x" "$(verdict "$r" '>=' 0.9)"
printf '  %-52s %8s\n' "ratio mq/raw (10,000 per commit, same as mq)" "$(ratio_rate b-mq b-raw10k)x"
r=$(ratio_rate b-mq b-sqlite)
printf '  %-52s %8s  target >= 2x:   %s\n' "ratio mq/sqlite3" "${r}x" "$(verdict "$r" '>=' 2)"
printf '  %-52s %s\n' "size on disk (KiB): mq / raw / sqlite3" "$(commas "$size_mq") / $(commas "$size_raw") / $(commas "$size_sq")"
echo "  (sqlite3: .import into a one-column table is the faster honest way; a generated"
echo "   BEGIN; INSERT x N; COMMIT script took about 2.5x as long on the reference machine)"
echo

echo "(c) drain: $(commas "$BULK") messages, output to /dev/null, median of $ROUNDS runs"
printf '  %-52s %8s %12s\n' "" "seconds" "messages/s"
bc_row c-raw "raw LMDB loop (C; first+read+delete, 1,000/commit)"
bc_row c-mq "mq-receive --all (4,000 a batch, 2 commits each)"
bc_row c-sqlite "sqlite3 DELETE .. LIMIT 1000 RETURNING, 1 txn each"
bc_row c-raw4k "raw LMDB loop, 4,000 per commit (info)"
bc_row c-layout "mq's LMDB work alone, in C (info: rawbulk drain1r)"
bc_row c-layout3 "the same in format 3's layout (info: drain3)"
r=$(ratio_rate c-mq c-raw)
printf '  %-52s %8s  target >= 0.6x: %s\n' "ratio mq/raw" "${r}x" "$(verdict "$r" '>=' 0.6)"
printf '  %-52s %8s\n' "ratio mq/raw (4,000 per commit, as mq)" "$(ratio_rate c-mq c-raw4k)x"
printf '  %-52s %8s\n' "ratio mq's LMDB work/raw (what the layout allows)" "$(ratio_rate c-layout c-raw)x"
printf '  %-52s %8s\n' "ratio mq/mq's LMDB work (what mq's own code costs)" "$(ratio_rate c-mq c-layout)x"
printf '  %-52s %8s\n' "ratio format 3's LMDB work/raw (three trees)" "$(ratio_rate c-layout3 c-raw)x"
r=$(ratio_rate c-mq c-sqlite)
printf '  %-52s %8s  target >= 2x:   %s\n' "ratio mq/sqlite3" "${r}x" "$(verdict "$r" '>=' 2)"
echo

# --- (d) head of a deep queue -----------------------------------------------------------------
say "(d) head of the queue: filling $BIG messages with mq-send -l --express"
D=$TMP/d
mkdir -p "$D"
new_store "$D/small"
new_store "$D/big"
seq "$SMALL" | "$SEND" -l --express -s "$D/small" q
t0=$(date +%s%N)
seq "$BIG" | "$SEND" -l --express -s "$D/big" q
t1=$(date +%s%N)
check_count d-fill "$(mq_count "$D/big" q)" "$BIG"
check_count d-fill "$(mq_count "$D/small" q)" "$SMALL"
sync
say "  receiving and peeking the head, $HEAD_RUNS times per depth"
for i in 1 2 3 4 5; do  # warm-up, not counted; failures too are noted
  for d in small big; do
    timed "d-warm-$d" -- "$RECV" -s "$D/$d" q || true
    "$SEND" --express -s "$D/$d" q "$BODY"
  done
done
for ((i = 0; i < HEAD_RUNS; i++)); do
  for d in small big; do
    timed "d-recv-$d" -- "$RECV" -s "$D/$d" q || true
    "$SEND" --express -s "$D/$d" q "$BODY"  # refill: the depth stays the same
  done
done
for ((i = 0; i < HEAD_RUNS; i++)); do
  for d in small big; do timed "d-peek-$d" -- "$PEEK" -s "$D/$d" q || true; done
done
# The heap alone (RSS also counts the store's mapped pages a run touched): the peak of the
# program break's growth plus the live anonymous private mappings (malloc's large blocks and
# LMDB's page lists) of one mq-receive, from its brk/mmap/munmap calls under strace. (valgrind's
# massif cannot see the heap of a static binary: its malloc is not replaced, and it reports 0.)
heap_peak() {  # heap_peak small|big: peak heap bytes of one mq-receive, or "-"
  command -v strace >/dev/null || { echo -; return; }
  strace -e trace=brk,mmap,munmap -o "$TMP/heap.$1" "$RECV" -s "$D/$1" q >/dev/null 2>&1 ||
    { echo -; return; }
  "$SEND" --express -s "$D/$1" q "$BODY"
  awk '
    function hex(s,  v, i) {  # mawk has no strtonum
      s = tolower(s); sub(/^0x/, "", s); v = 0
      for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
      return v
    }
    /^brk\(/ { v = hex($NF); if (!base) base = v; brk = v - base }
    /^mmap\(NULL,/ && /MAP_PRIVATE\|MAP_ANONYMOUS/ { split($2, a, ","); anon[hex($NF)] = a[1] + 0; live += a[1] }
    /^munmap\(/ { split($1, a, "[(,]"); at = hex(a[2]); if (at in anon) { live -= anon[at]; delete anon[at] } }
    { if (brk + live > peak) peak = brk + live }
    END { printf "%.0f\n", peak }' "$TMP/heap.$1"
}
heap_small=$(heap_peak small)
heap_big=$(heap_peak big)
size_small=$(du -sk "$D/small" | awk '{ print $1 }')
size_big=$(du -sk "$D/big" | awk '{ print $1 }')

d_val() {  # d_val NAME median|max  (ns or KiB)
  [ -s "$TMP/$1" ] || { echo 0; return; }
  if [ "$2" = max ]; then field "$TMP/$1" 5; else median_of "$TMP/$1"; fi
}
d_row() {  # d_row recv|peek|recv-rss|peek-rss|recv-flt LABEL
  local s b r
  if [ "$1" = recv-flt ]; then
    s=$(d_val d-recv-small.flt median)
    b=$(d_val d-recv-big.flt median)
    printf '  %-36s %12s %14s %7s   %s\n' "$2" "$s" "$b" "+$((b - s))" \
      "(B-tree levels; a fault maps up to 16 cached pages of the file)"
  elif [ "$1" = recv ] || [ "$1" = peek ]; then
    s=$(d_val "d-$1-small.ns" median)
    b=$(d_val "d-$1-big.ns" median)
    r=$(awk -v s="$s" -v b="$b" 'BEGIN { printf "%.2f", s ? b / s : 0 }')
    printf '  %-36s %12s %14s %7sx  %s\n' "$2" "$(calc %.3f "$s / 1e6")" "$(calc %.3f "$b / 1e6")" "$r" \
      "target <= 2x: $(verdict "$r" '<=' 2)"
  else
    local kind=${1%-rss}
    s=$(d_val "d-$kind-small.rss" median)
    b=$(d_val "d-$kind-big.rss" median)
    r=$(awk -v s="$s" -v b="$b" 'BEGIN { printf "%.2f", s ? b / s : 0 }')
    printf '  %-36s %12s %14s %7sx  %s\n' "$2" "$(commas "$s")/$(commas "$(d_val "d-$kind-small.rss" max)")" \
      "$(commas "$b")/$(commas "$(d_val "d-$kind-big.rss" max)")" "$r" \
      "$([ "$b" -lt "$s" ] || printf +)$(commas $((b - s))) KiB (info: mostly mapped file pages)"
  fi
}
echo "(d) head of the queue: one invocation, median of $HEAD_RUNS, depth kept by a refill after each receive"
printf '  %-36s %12s %14s %8s\n' "" "depth $(commas $SMALL)" "depth $(commas "$BIG")" "ratio"
d_row recv "mq-receive QUEUE, ms"
d_row peek "mq-peek QUEUE, ms"
d_row recv-rss "mq-receive peak RSS KiB (median/max)"
d_row peek-rss "mq-peek peak RSS KiB (median/max)"
d_row recv-flt "mq-receive page faults (median)"
if [ "$heap_small" != - ] && [ "$heap_big" != - ]; then
  r=$(awk -v s="$heap_small" -v b="$heap_big" 'BEGIN { printf "%.2f", s ? b / s : 0 }')
  printf '  %-36s %12s %14s %7sx  flat (<= 1.1x): %s\n' "mq-receive peak heap KiB (strace)" \
    "$(commas $((heap_small / 1024)))" "$(commas $((heap_big / 1024)))" "$r" "$(verdict "$r" '<=' 1.1)"
else
  printf '  %-36s %s\n' "mq-receive peak heap" "not measured (needs strace)"
fi
printf '  %-36s %12s %14s\n' "store size on disk, KiB" "$(commas "$size_small")" "$(commas "$size_big")"
printf '  %-36s %27s\n' "fill of the big queue (--express)" \
  "$(calc %.1f "($t1 - $t0) / 1e9") s, $(commas "$(calc %.0f "$BIG / (($t1 - $t0) / 1e9)")") msg/s"
for d in small big; do
  f=$(($(fails_of "d-warm-$d") + $(fails_of "d-recv-$d")))
  msg=$(first_fail "d-recv-$d")
  [ -n "$msg" ] || msg=$(first_fail "d-warm-$d")
  [ "$f" = 0 ] || printf '  FAILED mq-receive at depth %s: %d of %d runs (5 warm-up + %d): %s\n' \
    "$d" "$f" $((HEAD_RUNS + 5)) "$HEAD_RUNS" "$msg"
  [ "$(fails_of "d-peek-$d")" = 0 ] || printf '  FAILED mq-peek at depth %s: %s\n' "$d" "$(first_fail "d-peek-$d")"
done
[ "$(fails_of d-fill)" = 0 ] || echo "  WARNING fill: $(first_fail d-fill)"
echo "  (peak RSS is ru_maxrss from wait4, as /usr/bin/time -f %M: it counts the pages of the"
echo "   memory-mapped store the process touched as well as its heap; the heap alone is the"
echo "   strace row, the memory that depends on the program rather than on the kernel)"
echo
load_end=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
echo "(e) source and build"
echo "  largest source files (lines):"
(cd "$SRC" && wc -l lib/*/*.cpp lib/*/*.hpp cmd/*.cpp cmd/admin/*.cpp | grep -v ' total$' |
  sort -rn | head -3 | awk '{ printf "    %6d  %s\n", $1, $2 }')
# build_time DIR-OF-SOURCE: "real cpu" seconds of a full build into a fresh directory.
build_time() {
  local out=$TMP/build-time TIMEFORMAT='%R %U %S'
  rm -rf "$out"
  { time "$1/scripts/build.sh" "$out" >/dev/null 2>"$TMP/build.err"; } 2>"$TMP/build.time" ||
    die "the build of $1 failed: $(tail -3 "$TMP/build.err")"
  rm -rf "$out"
  awk '{ printf "%.0f %.0f", $1, $2 + $3 }' "$TMP/build.time"
}
if [ "$BUILD_TIME" = 1 ]; then
  now=$(build_time "$SRC")
  printf '  %-52s %8s %8s\n' "full build (tools and tests), seconds" "real" "cpu"
  printf '  %-52s %8s %8s\n' "this tree" ${now}
  if [ -n "${BENCH_BUILD_BEFORE:-}" ]; then
    git -C "$SRC" worktree add -q --detach "$TMP/before-src" "$BENCH_BUILD_BEFORE" ||
      die "cannot check out $BENCH_BUILD_BEFORE"
    before=$(build_time "$TMP/before-src")
    git -C "$SRC" worktree remove --force "$TMP/before-src"
    printf '  %-52s %8s %8s\n' "$BENCH_BUILD_BEFORE" ${before}
    set -- $now $before
    printf '  %-52s %8s %8s  target <= 0.5x: %s\n' "ratio this/before" \
      "$(awk -v a="$1" -v b="$3" 'BEGIN { printf "%.2fx", a / b }')" \
      "$(awk -v a="$2" -v b="$4" 'BEGIN { printf "%.2fx", a / b }')" \
      "$(verdict "$(awk -v a="$2" -v b="$4" 'BEGIN { printf "%.2f", a / b }')" '<=' 0.5)"
  fi
else
  echo "  (--build-time: a timed full build; BENCH_BUILD_BEFORE=REV: and of REV, for the ratio)"
fi
echo

echo "load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') at the end"
if awk -v a="$load_start" -v b="$load_end" 'BEGIN { exit !(a >= 1 || b >= 1) }'; then
  echo "WARNING: the machine was busy (1-minute load >= 1): other processes' disk and CPU work"
  echo "  inflate fsync and start-up times; compare ratios only from a run on an idle machine."
fi
