#!/bin/bash
# The static tools' start-up order (issue 25, start-up): mq-send, mq-receive, mq-peek and
# mq-watch are linked by ld.lld with cmd/startup-order.txt as their --symbol-ordering-file, so
# that the code a single send or receive runs lies in one run at the head of the text, not in
# every 64 KiB of it (each page fault of a spread-out start costs some 14 us on a virtual
# machine; bench/foundation.sh (a) measures the whole). Checked in the built tools: linked by
# LLD, the functions of a send's and a receive's start within the first 512 KiB of the text
# (the list's functions take some 400 KiB), glibc's start-up data within the first 16 KiB of
# .bss, and a list that still names functions the tools have (scripts/startup-order.sh
# rewrites it).
. "$(dirname "$0")/lib.sh"

cache=$MQ_BIN/CMakeCache.txt
[ -f "$cache" ] || skip "no CMakeCache.txt in $MQ_BIN"
grep -q '^MQ_SANITIZE:BOOL=ON$' "$cache" && skip "a sanitized build links the tools dynamically, in no order"
grep -q '^MQ_FUZZ:BOOL=ON$' "$cache" && skip "a fuzz build links the tools dynamically, in no order"
grep -q '^MQ_STARTUP_ORDER:BOOL=OFF$' "$cache" && skip "configured with -DMQ_STARTUP_ORDER=OFF"
command -v readelf >/dev/null || skip "no readelf"
grep -q '^MQ_HAVE_LLD:INTERNAL=1$' "$cache" ||
  fail "the build found no ld.lld, so the tools start in no order (scripts/setup.sh installs lld)"

list=$MQ_SRC/cmd/startup-order.txt
[ -s "$list" ] || fail "$list is missing"

# section_start BIN NAME: the address (hex) of section NAME in BIN, empty if it has none.
section_start() {
  readelf -SW "$1" | awk -v n="$2" '{ for (i = 1; i < NF; i++) if ($i == n) { print $(i + 2); exit } }'
}

# What every one of them runs on its way to the store, and what a send or a receive adds.
# Demangled names, matched up to their parameters.
common=(_start __libc_start_main_impl main malloc 'mq::Store::Open(' 'CLI::detail::split_up(' mdb_txn_begin
  mdb_txn_commit mdb_cursor_get)
for tool in mq-send mq-receive mq-peek mq-watch; do
  bin=$MQ_BIN/$tool
  readelf -p .comment "$bin" | grep -q 'Linker:.*LLD' || fail "$tool was not linked by ld.lld"
  text=$(section_start "$bin" .text)
  [ -n "$text" ] || { fail "$tool has no .text section"; continue; }
  nm -C "$bin" >"$T/$tool.nm"
  want=("${common[@]}")
  case $tool in
    mq-send) want+=('mq::Store::Append(') ;;
    mq-receive) want+=(mdb_cursor_del) ;;
  esac
  for sym in "${want[@]}"; do
    addr=$(awk -v s="$sym" '($2 == "T" || $2 == "t") {
        name = substr($0, index($0, " " $2 " ") + 3)
        if (name == s || (s ~ /\($/ && index(name, s) == 1)) { print $1; exit } }' "$T/$tool.nm")
    [ -n "$addr" ] || { fail "$tool has no function $sym"; continue; }
    off=$((0x$addr - 0x$text))
    [ "$off" -ge 0 ] && [ "$off" -lt $((512 * 1024)) ] ||
      fail "$tool: $sym lies $((off / 1024)) KiB into the text, not in the start-up run at its head"
  done
  # glibc's start-up data, which the default order leaves at the far end of .bss (past 16 KiB
  # of pthread keys, for one), lies at its head with the rest of what a run touches.
  bss=$(section_start "$bin" .bss)
  [ -n "$bss" ] || { fail "$tool has no .bss section"; continue; }
  for sym in _dl_x86_cpu_features _dl_phdr __libc_argv; do
    addr=$(awk -v s="$sym" '$3 == s && ($2 == "b" || $2 == "B") { print $1; exit }' "$T/$tool.nm")
    [ -n "$addr" ] || { fail "$tool has no data symbol $sym"; continue; }
    off=$((0x$addr - 0x$bss))
    [ "$off" -ge 0 ] && [ "$off" -lt $((16 * 1024)) ] ||
      fail "$tool: $sym lies $((off / 1024)) KiB into .bss, not with the start-up data at its head"
  done
  nm "$bin" | awk '{ print $NF }' >>"$T/symbols"
done

# A list gone stale (renamed functions and data) orders nothing: most of its names must still
# exist.
sort -u "$T/symbols" -o "$T/symbols"
grep -v '^#' "$list" | sort -u >"$T/listed"
total=$(wc -l <"$T/listed")
gone=$(comm -23 "$T/listed" "$T/symbols" | wc -l)
[ "$total" -ge 200 ] || fail "$list names only $total functions and data"
[ $((gone * 10)) -le "$total" ] ||
  fail "$gone of the $total names in $list are in no tool: run scripts/startup-order.sh"

finish
