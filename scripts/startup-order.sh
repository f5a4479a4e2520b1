#!/usr/bin/env bash
# startup-order.sh: write cmd/startup-order.txt, the functions that a single mq-send, mq-receive
# and mq-peek run and the data they touch, for the linker to lay them out together at the head
# of the tools' text and data sections.
#
#   scripts/startup-order.sh [BUILD_DIR]     (default: build; the tools must be built there)
#
# Why: a one-message mq-send or mq-receive is mostly process start, and on a virtual machine a
# page fault costs some 14 us (bench/foundation.sh (a)). Linked in the default order, the code
# a send runs is spread over every 64 KiB of the tool's 1.7 MB of text, so each of its ~27
# text faults maps a window that it barely uses. With this list ld.lld
# (--symbol-ordering-file, CMakeLists.txt) puts that code, from mq, CLI11, {fmt}, LMDB,
# libstdc++ and glibc, in one run at the start of the text.
#
# A stale list costs speed only: names that no longer exist are skipped by the linker, and
# functions missing from it are laid out after it as before. Rerun it when the start-up path
# changes much (tests/cli/test_startup_order.sh checks that the tools' start still lies at the
# head of their text). Needs valgrind (callgrind lists every function a run executes, by its
# symbol name; lackey every address it reads or writes) and the Debian toolchain the tools were
# built with.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-$SRC/build}
OUT=$SRC/cmd/startup-order.txt
command -v valgrind >/dev/null || { echo "startup-order.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
for t in mq-send mq-receive mq-peek mq-watch mq-admin; do
  [ -x "$BIN/$t" ] || { echo "startup-order.sh: $BIN/$t is missing: build the tools first" >&2; exit 1; }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
S=$TMP/store
"$BIN/mq-admin" -s "$S" init >/dev/null
"$BIN/mq-admin" -s "$S" create q >/dev/null
"$BIN/mq-send" -s "$S" q warm >/dev/null

# profile NAME TOOL ARGS...: $TMP/NAME, the names of the functions one run of TOOL executes
# (callgrind's "fn=(N) NAME" and "cfn=(N) NAME" lines name each function once).
profile() {
  local name=$1
  shift
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$TMP/$name.cg" "$@" \
    >/dev/null 2>"$TMP/$name.err" || { cat "$TMP/$name.err" >&2; exit 1; }
  sed -n -E 's/^c?fn=\([0-9]+\) (.*)$/\1/p' "$TMP/$name.cg" | sed -E "s/'[0-9]+$//" |
    grep -v -E '^(0x[0-9a-f]+|\(below main\))$' | awk '!seen[$0]++' >"$TMP/$name"
}
profile send "$BIN/mq-send" -s "$S" q "a message body"
profile send-l "$BIN/mq-send" -s "$S" -l q < <(printf 'one\ntwo\n')
profile receive "$BIN/mq-receive" -s "$S" q
profile peek "$BIN/mq-peek" -s "$S" q
profile receive-all "$BIN/mq-receive" -s "$S" --all -l q
cat "$TMP/send" "$TMP/send-l" "$TMP/receive" "$TMP/peek" "$TMP/receive-all" | awk '!seen[$0]++' >"$TMP/names"

# The data a run touches: glibc's, libstdc++'s and CLI11's start-up variables lie all over
# .data, .bss and .data.rel.ro (some 90 KiB), one fault a page. Listed, the linker puts them at
# the head of their sections. valgrind's lackey traces every load and store; hotdata.awk maps
# them to the tool's data symbols (nm -S -n), in the order of their first touch.
data() {
  local name=$1 tool=$2
  shift 2
  valgrind --tool=lackey --trace-mem=yes --log-file="$TMP/$name.lk" "$BIN/$tool" "$@" \
    >/dev/null 2>"$TMP/$name.err" || { cat "$TMP/$name.err" >&2; exit 1; }
  nm -S -n "$BIN/$tool" >"$TMP/$name.nm"
  awk -f "$SRC/scripts/hotdata.awk" "$TMP/$name.nm" "$TMP/$name.lk" >"$TMP/$name.data"
  rm -f "$TMP/$name.lk"
}
data send mq-send -s "$S" q "a message body"
data receive mq-receive -s "$S" q
"$BIN/mq-send" -s "$S" q warm >/dev/null
data peek mq-peek -s "$S" q

# glibc picks a string function's variant for the CPU at start-up, by its IFUNC resolver
# (valgrind's emulated CPU has no AVX-512, so it runs other variants than the machine does):
# the resolvers, then for each family that ran its variants for today's CPUs, EVEX and AVX-512
# first, then AVX2. Older CPUs' variants stay where the linker puts them.
for t in mq-send mq-receive mq-peek mq-watch; do nm "$BIN/$t"; done | awk 'NF == 3 { print $2, $3 }' |
  sort -u -k 2,2 >"$TMP/symbols"
sed -n -E 's/^__(mem|str|stp|wcs|wmem)([a-z]*)_(sse2|ssse3|sse42|sse4_1|sse4_2|avx|avx2|evex|avx512).*/\1\2/p' \
  "$TMP/names" | sed -e 's/^memcpy$/memmove/' -e 's/^mempcpy$/memmove/' | sort -u >"$TMP/families"
{
  # Every resolver runs at start-up (a static program applies all its IRELATIVE relocations).
  awk '$1 == "i" { print $2 }' "$TMP/symbols"
  for kind in 'evex|avx512' 'avx2'; do
    while read -r fam; do awk '{ print $2 }' "$TMP/symbols" | grep -E "^__${fam}_.*(${kind})" | grep -v _rtm || true; done <"$TMP/families"
  done
} >"$TMP/variants"

# The order: the process's start (callgrind names it "(below main)", and does not see what a
# static program does with the vDSO), the resolvers and string variants, then what all three
# tools run, then what only some run, send's first: each tool's start in as few pages as can be.
{
  printf '%s\n' _start __libc_start_main_impl __libc_start_call_main _dl_non_dynamic_init \
    _dl_new_object _dl_add_to_namespace_list _dl_setup_hash _dl_lookup_symbol_x do_lookup_x \
    _dl_vdso_vsym _dl_important_hwcaps _dl_init_paths
  cat "$TMP/variants"
  awk 'FILENAME != last { last = FILENAME; n++ } { c[$0]++ } n == 1 { order[++k] = $0 }
       END { for (i = 1; i <= k; i++) if (c[order[i]] == 3) print order[i] }' \
    "$TMP/send" "$TMP/receive" "$TMP/peek"
  cat "$TMP/names"
  cat "$TMP/send.data" "$TMP/receive.data" "$TMP/peek.data"
} | awk '!seen[$0]++' >"$TMP/ordered"

{
  echo "# The functions that a single mq-send, mq-receive and mq-peek run, their shared start first,"
  echo "# then the data they touch:"
  echo "# ld.lld's --symbol-ordering-file for the static tools (CMakeLists.txt). Written by"
  echo "# scripts/startup-order.sh ($(gcc -dumpfullversion) $(dpkg-query -W -f '${Version}' libc6-dev 2>/dev/null || true)); a stale list only costs speed."
  cat "$TMP/ordered"
} >"$OUT"
echo "startup-order.sh: $(grep -vc '^#' "$OUT") functions and data in $OUT"
