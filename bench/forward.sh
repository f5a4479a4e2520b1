#!/usr/bin/env bash
# forward.sh: throughput of mq-admin forward (issue 14): N messages of 1 KiB moved from store A
# to store B over a local link (`mq-admin --store B accept` as the link's command), next to
#
#   (a) the naive copy  mq-receive src --all -l | mq-send --store B -l dst   (bodies only, not
#       exactly once: a crash loses or repeats messages)
#   (a2) the import-style naive copy of issue 14's text
#       mq-receive src --all --json | mq-admin --store B import dst   (every property, as
#       forward carries them; not exactly once either)
#   (b) export/import   mq-admin export src | mq-admin --store B import dst  (every property,
#       nothing removed at the source)
#   (c) the pipe itself: cat of the same bytes through a pipe
#   (d) forward through a pipe throttled to 10 MiB/s (pv -L 10m in the link's command), next
#       to the throttle: the figure is body bytes, so the wire's per-message overhead counts
#       against it
#
#   bench/forward.sh [N]     default: N=100000
#
# Prints messages per second, MiB/s of bodies and the ratios, with issue 14's targets: forward
# at least 80% of the naive copy (against both (a2), the issue's receive | import, and the
# bodies-only (a)), and through the throttled pipe at least 80% of the throttle.
# Needs pv (scripts/setup.sh) and built mq tools (MQ_BIN, default build/).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
MQ_BIN=${MQ_BIN:-$SRC/build}
PATH=$MQ_BIN:$PATH
N=${1:-100000}
T=$(mktemp -d "${BENCH_DIR:-/var/tmp}/mq-bench-forward.XXXXXX")
trap 'rm -rf "$T"' EXIT
export MQ_STORE=$T/a
B=$T/b
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
mib() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f", n * 1024 / (b - a) / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", 100 * a / b }'; }
# target NAME RATIO: "met" or "missed" against 80%
target() { awk -v r="${2%\%}" -v n="$1" 'BEGIN { printf "%s: %s%% (target 80%%: %s)\n", n, r, (r >= 80 ? "met" : "missed") }'; }

mq-admin init >/dev/null && mq-admin --store "$B" init >/dev/null
mq-admin create src && mq-admin --store "$B" create dst
# N lines of 1023 characters + newline: 1 KiB bodies (1023 bytes each as messages).
head -c $((N * 768)) /dev/urandom | base64 -w 1023 >"$T/b64"
head -n "$N" "$T/b64" >"$T/lines"
[ "$(wc -l <"$T/lines")" = "$N" ]
mq-admin link add b --via "mq-admin --store '$B' accept"

report() {  # report NAME START END
  printf '%-44s %8s msg/s %7s MiB/s\n' "$1" "$(rate "$N" "$2" "$3")" "$(mib "$N" "$2" "$3")"
}

# Both stores' files grown first (as by earlier use), so that no run pays for it alone: the
# first run into a new store would.
mq-send --store "$B" -l dst <"$T/lines" && mq-admin --store "$B" purge dst >/dev/null
mq-send -l src <"$T/lines" && mq-admin purge src >/dev/null

# forward over a local pipe
mq-send -l b:dst <"$T/lines"
a=$(now); mq-admin forward b --once; b=$(now)
fwd=$(rate "$N" "$a" "$b")
report "forward --once (exactly once, in order)" "$a" "$b"
[ "$(mq-admin --store "$B" stat dst --json | jq .messages)" = "$N" ]
mq-admin --store "$B" purge dst >/dev/null

# (a) the naive copy
mq-send -l src <"$T/lines"
a=$(now); mq-receive src --all -l | mq-send --store "$B" -l dst; b=$(now)
naive=$(rate "$N" "$a" "$b")
report "mq-receive --all -l | mq-send -l (naive)" "$a" "$b"
mq-admin --store "$B" purge dst >/dev/null

# (a2) receive | import: the naive copy issue 14 names (mq-admin import reads JSON lines)
mq-send -l src <"$T/lines"
a=$(now); mq-receive src --all --json | mq-admin --store "$B" import -q dst; b=$(now)
naive_import=$(rate "$N" "$a" "$b")
report "mq-receive --all --json | mq-admin import" "$a" "$b"
[ "$(mq-admin --store "$B" stat dst --json | jq .messages)" = "$N" ]
mq-admin --store "$B" purge dst >/dev/null

# (b) export | import
mq-send -l src <"$T/lines"
a=$(now); mq-admin export src | mq-admin --store "$B" import dst; b=$(now)
exim=$(rate "$N" "$a" "$b")
report "mq-admin export | mq-admin import" "$a" "$b"
mq-admin purge src >/dev/null
mq-admin --store "$B" purge dst >/dev/null

# (c) the pipe
a=$(now); cat "$T/lines" | cat >/dev/null; b=$(now)
report "cat | cat of the same bytes" "$a" "$b"

echo "forward / export-import: $(ratio "$fwd" "$exim")"

# (d) a 10 MiB/s pipe
mq-admin link set b --via "pv -q -L 10m | mq-admin --store '$B' accept"
mq-send -l b:dst <"$T/lines"
a=$(now); mq-admin forward b --once; b=$(now)
report "forward through pv -L 10m" "$a" "$b"
[ "$(mq-admin --store "$B" stat dst --json | jq .messages)" = "$N" ]
throttled=$(ratio "$(mib "$N" "$a" "$b")" 10)
target "forward / receive | import (naive, every property)" "$(ratio "$fwd" "$naive_import")"
target "forward / receive -l | send -l (naive, bodies only)" "$(ratio "$fwd" "$naive")"
target "forward through pv -L 10m / 10 MiB/s (body bytes)" "$throttled"
