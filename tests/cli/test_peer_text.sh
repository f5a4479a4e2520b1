#!/bin/bash
# A peer's text is cut and escaped wherever it is printed or stored (issue 23, defect 5): an
# error frame of 2 MB with newlines and terminal escapes, from the far side of a link, is
# printed by forward once (not on every retry) and cut to a few hundred bytes; link stat and
# link list show it on one line, with no control character; the stored last_error is
# bounded too.
. "$(dirname "$0")/lib.sh"

cat >"$T/evil.py" <<'PY'
import struct, sys, zlib
text = b'bad\nevil 0 0 - - forged-row\x1b[31mred\xc2\x9b' + b'x' * 2000000
body = b'E' + text
sys.stdout.buffer.write(struct.pack('>I', len(body) + 4) + body + struct.pack('>I', zlib.crc32(body)))
PY
expect_rc 0 mq-admin link add evil --via "python3 '$T/evil.py'"
expect_rc 0 mq-send evil:q x
mq-admin forward evil --follow 2>"$T/follow.err" &
fwd=$!
# Retries: 100 ms, 200 ms, 400 ms, 800 ms...
failed() { [ "$(mq-admin link stat evil --json | jq -r '.last_error // ""')" != "" ]; }
until_true 20 failed || fail "the forward never failed"
sleep 2
kill -TERM "$fwd"
wait "$fwd"
[ "$(grep -c 'retrying in' "$T/follow.err")" = 1 ] ||
  fail "the same failure was printed $(grep -c 'retrying in' "$T/follow.err") times"
size=$(wc -c <"$T/follow.err")
[ "$size" -lt 4000 ] || fail "forward printed $size bytes of the peer's text"
LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/follow.err" && fail "a control character reached stderr"
grep -q 'bytes in all' "$T/follow.err" || fail "the cut is not said: $(head -c 600 "$T/follow.err")"
expect_rc 0 mq-admin link list
[ "$(wc -l <"$T/out")" = 2 ] || fail "link list has $(wc -l <"$T/out") lines: $(head -c 600 "$T/out")"
LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/out" && fail "a control character in link list"
expect_rc 0 mq-admin link stat evil
[ "$(grep -c '^last error:' "$T/out")" = 1 ] && ! grep -q 'forged-row$' "$T/out" ||
  fail "link stat: $(head -c 600 "$T/out")"
LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/out" && fail "a control character in link stat"
expect_rc 0 mq-admin link stat evil --json
len=$(jq -r '.last_error | length' "$T/out")
[ "$len" -le 1100 ] || fail "the stored last_error is $len characters"
# Nothing was lost: the message waits.
[ "$(mq-admin stat 'out;evil' --json | jq .messages)" = 1 ] || fail "out;evil lost its message"
expect_rc 0 mq-admin check
finish
