#!/usr/bin/env bash
# srmp.sh: the cost of SRMP documents (lib/wire/srmp.cpp, issue 14) against JSON lines, for N
# messages of 1 KiB (text: the base64 of random bytes, one line each for mq-send -l):
#
#   (a) mq-admin export --format srmp QUEUE   vs  mq-admin export QUEUE (JSON)
#   (b) mq-admin import --format srmp COPY    vs  mq-admin import COPY (JSON)
#
#   bench/srmp.sh [N]     default N=100000
#
# Prints messages per second, MB/s of output or input, bytes per message and the ratios
# SRMP/JSON. Needs built mq tools (MQ_BIN, default build/).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
MQ_BIN=${MQ_BIN:-$SRC/build}
PATH=$MQ_BIN:$PATH
N=${1:-100000}
T=$(mktemp -d "${BENCH_DIR:-/var/tmp}/mq-bench-srmp.XXXXXX")
trap 'rm -rf "$T"' EXIT
export MQ_STORE=$T/store
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
mbs() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f", n / (b - a) / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

mq-admin init >/dev/null
mq-admin create q >/dev/null
# N records of 1 KiB: 768 random bytes in base64 is 1024 characters, one per line.
head -c $((N * 768)) /dev/urandom | base64 -w 1024 | head -n "$N" >"$T/lines"
mq-send -l --express q <"$T/lines"

declare -A out_rate out_mbs size in_rate in_mbs
for fmt in json srmp; do
  a=$(now)
  mq-admin export --format "$fmt" q >"$T/q.$fmt"
  b=$(now)
  size[$fmt]=$(stat -c %s "$T/q.$fmt")
  out_rate[$fmt]=$(rate "$N" "$a" "$b")
  out_mbs[$fmt]=$(mbs "${size[$fmt]}" "$a" "$b")
  mq-admin create "copy_$fmt" >/dev/null
  a=$(now)
  mq-admin import --format "$fmt" --new-ids "copy_$fmt" <"$T/q.$fmt"
  b=$(now)
  in_rate[$fmt]=$(rate "$N" "$a" "$b")
  in_mbs[$fmt]=$(mbs "${size[$fmt]}" "$a" "$b")
done

printf '%d messages of 1 KiB\n' "$N"
for fmt in json srmp; do
  printf '%-5s export %8s msg/s %7s MB/s   import %8s msg/s %7s MB/s   %5d bytes/message\n' \
    "$fmt" "${out_rate[$fmt]}" "${out_mbs[$fmt]}" "${in_rate[$fmt]}" "${in_mbs[$fmt]}" \
    $((size[$fmt] / N))
done
printf 'srmp/json: export %s, import %s (messages per second), size %s\n' \
  "$(ratio "${out_rate[srmp]}" "${out_rate[json]}")" \
  "$(ratio "${in_rate[srmp]}" "${in_rate[json]}")" \
  "$(ratio "${size[srmp]}" "${size[json]}")"
