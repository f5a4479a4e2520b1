#!/bin/bash
# mq-send -l / -0: one message per line or NUL-terminated record; 100,000 of them arrive
# complete and in order, a last record without a terminator is still a message, and the lines
# of a writer that pauses are sent during the pause.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq -r .messages; }

# Small cases first: exact bodies, empty records, a missing final terminator.
expect_rc 0 mq-send --create -l q < <(printf 'one\n\nthree\nlast without newline')
[ "$(count q)" = 4 ] || fail "-l: 4 lines gave $(count q) messages"
expect_rc 0 mq-receive q --all --template '[{body}]'
expect_out '[one][][three][last without newline]'
expect_rc 0 mq-send -l q < <(printf 'a\nb\n')
[ "$(count q)" = 2 ] || fail "-l: a final newline made an extra empty message"
expect_rc 0 mq-receive q --all --template '[{body}]'
expect_out '[a][b]'
expect_rc 0 mq-send -0 q < <(printf 'x\ny\0\0z')
expect_rc 0 mq-receive q --all --template '[{body}]'
expect_out $'[x\ny][][z]'
# Nothing on stdin: nothing sent, and that is not an error.
expect_rc 0 mq-send -l q </dev/null
[ "$(count q)" = 0 ] || fail "-l with empty stdin sent $(count q) messages"

# Records longer than one read (200,000 bytes: over three 64 KiB reads) and records that
# arrive a few bytes at a time through a pipe come out whole.
{ head -c 200000 /dev/zero | tr '\0' a; printf '\nshort\n'; head -c 70000 /dev/zero | tr '\0' b; } >"$T/long"
expect_rc 0 mq-send -l q <"$T/long"
[ "$(count q)" = 3 ] || fail "-l long records: 3 records gave $(count q) messages"
mq-receive q --all -l >"$T/got"
cmp -s <(cat "$T/long"; echo) "$T/got" || fail "-l long records: bodies differ from what was sent"
(for i in 1 2 3; do printf 'pie'; sleep 0.05; printf "ce$i\nx"; sleep 0.05; printf "y$i\n"; done) | mq-send -l q
expect_rc 0 mq-receive q --all --template '[{body}]'
expect_out '[piece1][xy1][piece2][xy2][piece3][xy3]'

# 100,000 lines, the last one without its newline.
seq 1 100000 | head -c -1 >"$T/lines"
expect_rc 0 mq-send -l q <"$T/lines"
expect_out ''
[ "$(count q)" = 100000 ] || fail "-l 100000: count is $(count q)"
expect_rc 0 mq-peek q --last --template '{body}'
expect_out 100000
mq-receive q --all -l >"$T/got"
seq 1 100000 | cmp -s - "$T/got" || fail "-l 100000: received bodies differ from what was sent (order or content)"
[ "$(count q)" = 0 ] || fail "-l 100000: $(count q) messages left after --all"

# 100,000 NUL-terminated records of varied content, the last without its NUL.
seq 1 100000 | sed 's/$/ with spaces\tand tabs/' | tr '\n' '\0' | head -c -1 >"$T/records"
expect_rc 0 mq-send -0 --print-id q <"$T/records"
[ "$(wc -l <"$T/out")" = 100000 ] || fail "-0 --print-id printed $(wc -l <"$T/out") ids"
[ "$(sort -u "$T/out" | wc -l)" = 100000 ] || fail "-0 --print-id printed duplicate ids"
[ "$(count q)" = 100000 ] || fail "-0 100000: count is $(count q)"
mq-peek q --all -0 >"$T/got0"
{ cat "$T/records"; printf '\0'; } | cmp -s - "$T/got0" || fail "-0 100000: peeked records differ"
mq-receive q -n 100000 -0 >"$T/got0"
{ cat "$T/records"; printf '\0'; } | cmp -s - "$T/got0" || fail "-0 100000: received records differ"
expect_rc 1 mq-peek q
expect_rc 0 mq-admin check

# A writer that pauses (tail -f LOG | mq-send -l): what it wrote is sent before the pause
# ends, not with the next 10,000 lines or at the end of the input. The writer holds the pipe
# open until the first lines are in the queue, and gives up after 10 s.
mkfifo "$T/fifo"
mq-send -l --print-id q <"$T/fifo" >"$T/ids" &
sender=$!
exec 3>"$T/fifo"
printf 'first\nsecond\n' >&3
until_true 10 test "$(count q)" = 2 || fail "-l: the lines before a pause were not sent during it ($(count q))"
until_true 5 test "$(wc -l <"$T/ids")" = 2 || fail "-l --print-id: the ids came late ($(wc -l <"$T/ids"))"
printf 'third\n' >&3
until_true 10 test "$(count q)" = 3 || fail "-l: the line after a pause was not sent ($(count q))"
exec 3>&-
wait "$sender" || fail "mq-send -l from a pausing writer failed"
expect_rc 0 mq-receive q --all --template '[{body}]'
expect_out '[first][second][third]'

finish
