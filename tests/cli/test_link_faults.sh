#!/bin/bash
# Bad input and faults on a link (issue 14): a wrong protocol version (either side), a peer that
# is the same store, a command that is not mq-admin accept, a truncated stream and a corrupted
# one, a second forward on the same link: each a clear error, nothing lost or duplicated, and
# the link works once repaired. mq-admin forward --follow: woken by new messages, shown as
# connected by link stat, stops cleanly on SIGTERM.
. "$(dirname "$0")/lib.sh"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

B=$T/B
count() { mq-admin "$@" --json | jq -s 'map(.messages) | add // 0'; }
good="mq-admin --store '$B' accept"

# frame TYPE PAYLOAD: a frame of the transfer protocol (lib/wire/transfer.hpp) with its CRC-32
# (gzip's trailer holds the CRC-32 of the data, little-endian).
frame() {
  printf "$1$2" >"$T/fb"
  local len crc
  len=$(($(stat -c %s "$T/fb") + 4))
  crc=($(gzip -c <"$T/fb" | tail -c 8 | head -c 4 | od -An -tx1))
  printf "\\x$(printf %02x $((len >> 24 & 255)))\\x$(printf %02x $((len >> 16 & 255)))"
  printf "\\x$(printf %02x $((len >> 8 & 255)))\\x$(printf %02x $((len & 255)))"
  cat "$T/fb"
  printf "\\x${crc[3]}\\x${crc[2]}\\x${crc[1]}\\x${crc[0]}"
}

expect_rc 0 mq-admin --store "$B" init
expect_rc 0 mq-admin --store "$B" create dest
seq -f 'body-%03g' 200 | mq-send --create -l here || fail "local send"
expect_rc 0 mq-admin link add b --via "$good"
seq -f 'body-%03g' 200 | mq-send -l b:dest || fail "send to b:dest"

# --- a wrong protocol version --------------------------------------------------------------------
frame H 'MQXFER\0\3' >"$T/hello2"
expect_rc 10 mq-admin --store "$B" accept <"$T/hello2"
expect_err_match '^mq-admin: unsupported transfer protocol version 3 \(this mq-admin accept speaks version 2\)'
frame W 'MQXFER\0\3' >"$T/welcome2"
expect_rc 0 mq-admin link set b --via "cat '$T/welcome2'; cat >/dev/null"
expect_rc 10 mq-admin forward b --once --retry 10s
expect_err_match 'the far side speaks transfer protocol version 3 \(this mq-admin forward speaks version 2\)'
[ "$(count stat 'out;b')" = 200 ] || fail "a version mismatch changed out;b"

# --- the same store at both ends; not mq-admin accept at all ---------------------------------------
expect_rc 0 mq-admin link set b --via "mq-admin --store '$STORE' accept"
expect_rc 10 mq-admin forward b --once --retry 10s
grep -q "mq-admin: b: the far side refused: the link leads back to the same store" "$T/err" ||
  fail "same store: $(cat "$T/err")"
# Once: accept, whose hello says forward reports it, does not print it too.
[ "$(grep -c 'leads back to the same store' "$T/err")" = 1 ] ||
  fail "same store: the error is not shown once: $(cat "$T/err")"
expect_rc 0 mq-admin link set b --via "cat"
expect_rc 10 mq-admin forward b --once --retry 10s
expect_err_match 'did not answer as mq-admin accept does'
expect_rc 0 mq-admin link set b --via "printf 'HTTP/1.1 400 Bad Request\r\n\r\n'; cat >/dev/null"
expect_rc 10 mq-admin forward b --once --retry 10s
grep -q 'corrupted\|did not answer' "$T/err" || fail "garbage from the command: $(cat "$T/err")"
[ "$(count stat 'out;b')" = 200 ] || fail "a wrong peer changed out;b"
[ "$(count --store "$B" stat)" = 0 ] || fail "a wrong peer stored messages"
[ "$(count stat here)" = 200 ] || fail "a same-store link touched a local queue"

# --- a garbled stream to accept ----------------------------------------------------------------------
{ frame H 'MQXFER\0\2'; printf 'garbage that is no frame at all'; } >"$T/garbled"
expect_rc 10 mq-admin --store "$B" accept <"$T/garbled"
grep -q 'corrupted' "$T/err" || fail "garbled stream: $(cat "$T/err")"

# --- a truncated stream, a corrupted stream: nothing stored twice or damaged -------------------------
expect_rc 0 mq-admin link set b --via "dd bs=1 count=5000 status=none | $good"
run mq-admin forward b --once --retry 1s
grep -q 'the stream ends in the middle of a frame\|the stream ended before the sender said bye' "$T/err" || fail "truncated: $(cat "$T/err")"
grep -q 'retrying in 100ms' "$T/err" || fail "no backoff after a truncated stream: $(cat "$T/err")"
# One byte replaced in the middle of the stream.
expect_rc 0 mq-admin link set b --via "{ dd bs=1 count=3000 status=none; dd bs=1 count=1 status=none of=/dev/null; printf X; exec cat; } | $good"
run mq-admin forward b --once --retry 1s --timeout 5s
grep -q 'the stream is corrupted' "$T/err" || fail "corrupted: $(cat "$T/err")"
mq-peek --store "$B" dest --all -l >"$T/far" 2>/dev/null
[ -z "$(sort "$T/far" | uniq -d)" ] || fail "the far store holds duplicates after faults"
grep -qv '^body-[0-9][0-9][0-9]$' "$T/far" && fail "a damaged message was stored: $(grep -v '^body-[0-9]*$' "$T/far" | head -1)"
expect_rc 0 mq-admin link set b --via "$good"
expect_rc 0 mq-admin forward b --once
expect_rc 0 mq-peek --store "$B" dest --all -l
seq -f 'body-%03g' 200 >"$T/want"
cmp -s "$T/out" "$T/want" || fail "after repair the far store holds: $(diff "$T/out" "$T/want" | head -5)"

# --- --follow ---------------------------------------------------------------------------------------
mq-admin forward b --follow 2>"$T/follow.err" &
fwd=$!
BG+=("$fwd")
seq -f 'f-%03g' 10 | mq-send -l b:dest || fail "send while following"
wait_count() {
  local i
  for ((i = 0; i < 500; i++)); do
    [ "$(count --store "$B" stat dest)" = "$1" ] && return 0
    sleep 0.02
  done
  fail "the far queue holds $(count --store "$B" stat dest), expected $1"
}
wait_count 210
expect_rc 0 mq-admin link stat b --json
[ "$(jq -r .forward_pid "$T/out")" = "$fwd" ] || fail "link stat while following: $(cat "$T/out")"
expect_rc 5 mq-admin forward b --once
expect_err_match 'another mq-admin forward is running for this link'
mq-send b:dest later || fail "send later"
wait_count 211
kill -TERM "$fwd"
wait "$fwd"
rc=$?
[ "$rc" = 0 ] || fail "forward --follow ended with $rc on SIGTERM: $(cat "$T/follow.err")"
expect_rc 0 mq-admin link list
grep -Eq '^b +0 +0 +[0-9].* +- +' "$T/out" || fail "link list after --follow: $(cat "$T/out")"

expect_rc 0 mq-admin check
expect_rc 0 mq-admin --store "$B" check
finish
