#!/bin/bash
# Compression on a link (issue 14): mq-admin forward --compress always compresses the messages
# (zstd 'Z' frames: the envelopes are no longer readable on the wire, much smaller) and the
# far store holds every message unchanged, in order, binary bodies too; --compress never sends
# them plain and offers no compression in its hello, so accept answers without taking it (as
# it does to a forward that knows no compression); --compress auto over a slow pipe compresses
# once the pipe backs up; a bad --compress value is refused.
. "$(dirname "$0")/lib.sh"

B=$T/B
count() { mq-admin "$@" --json | jq -s 'map(.messages) | add // 0'; }
expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create dest
# The wire in both directions, next to the real accept.
expect_rc 0 mq-admin link add b --via "tee '$T/wire' | mq-admin --store '$B' accept | tee '$T/back'"

seq -f 'message number %05g of a compressible kind' 500 >"$T/lines"
head -c 3000 /dev/urandom >"$T/binary"
printf 'a\0b\r\n--MSMQ - SOAP boundary, 1\r\n' >>"$T/binary"

send_all() {
  mq-send -l b:dest <"$T/lines" || fail "send lines"
  mq-send b:dest <"$T/binary" || fail "send binary"
}
check_far() {
  [ "$(count --store "$B" stat dest)" = 501 ] || fail "$1: the far queue holds $(count --store "$B" stat dest)"
  mq-receive --store "$B" dest --count 500 -l >"$T/got" || fail "$1: receive lines"
  cmp -s "$T/got" "$T/lines" || fail "$1: lines differ: $(diff "$T/got" "$T/lines" | head -3)"
  mq-receive --store "$B" dest >"$T/gotbin" || fail "$1: receive binary"
  cmp -s "$T/gotbin" "$T/binary" || fail "$1: the binary body differs"
  [ "$(count stat 'out;b')" = 0 ] || fail "$1: out;b not empty"
}

# --- plain ---------------------------------------------------------------------------------------
send_all
expect_rc 0 mq-admin forward b --once --compress never
check_far never
plain=$(stat -c %s "$T/wire")
envelopes=$(grep -ac '<se:Envelope' "$T/wire")
[ "$envelopes" -ge 501 ] || fail "never: $envelopes readable envelopes on the wire, expected 501"
grep -aq zstd "$T/wire" && fail "never: the hello offers zstd"
grep -aq zstd "$T/back" && fail "never: accept took a compression that was not offered"

# --- always --------------------------------------------------------------------------------------
send_all
expect_rc 0 mq-admin forward b --once --compress always
check_far always
compressed=$(stat -c %s "$T/wire")
grep -aq zstd "$T/back" || fail "always: accept did not take zstd"
envelopes=$(grep -ac '<se:Envelope' "$T/wire")
[ "$envelopes" = 0 ] || fail "always: $envelopes envelopes readable on the wire"
[ $((compressed * 4)) -lt "$plain" ] || fail "always: $compressed bytes on the wire, plain $plain"

# --- auto over a slow pipe: plain until it backs up, then compressed ----------------------------
if command -v pv >/dev/null; then
  # Plain, the pipe and forward's buffer hold about 1,200 of these; the rest, compressed, goes
  # about three times as fast.
  expect_rc 0 mq-admin link set b --via "pv -q -L 512k | tee '$T/wire' | mq-admin --store '$B' accept"
  for i in 1 2 3 4 5 6 7 8; do send_all; done
  expect_rc 0 mq-admin forward b --once
  [ "$(count --store "$B" stat dest)" = 4008 ] || fail "auto: the far queue holds $(count --store "$B" stat dest)"
  envelopes=$(grep -ac '<se:Envelope' "$T/wire")
  [ "$envelopes" -lt 3000 ] || fail "auto over a 512 KiB/s pipe: $envelopes of 4008 envelopes plain"
  mq-admin --store "$B" purge dest >/dev/null
fi

expect_rc 2 mq-admin forward b --once --compress sometimes
expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
