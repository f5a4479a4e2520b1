#!/bin/bash
# Where mq-send takes the body from (argument, -f FILE, stdin) and that it is binary-safe.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q

# From the argument, exactly (no newline added or removed).
expect_rc 0 mq-send q 'from argument'
expect_out ''
expect_rc 0 mq-receive q
expect_out 'from argument'
expect_rc 0 mq-send q $'two\nlines\n'
expect_rc 0 mq-receive q
expect_out $'two\nlines\n'
# An empty argument is an empty body, not "read stdin".
expect_rc 0 mq-send q '' </dev/null
expect_rc 0 mq-peek q --template '{body_size}'
expect_out 0
expect_rc 0 mq-receive q
expect_out ''
# A body that looks like an option, after --.
expect_rc 0 mq-send q -- --not-an-option
expect_rc 0 mq-receive q
expect_out --not-an-option

# From a file.
printf 'file body\n' >"$T/body.txt"
expect_rc 0 mq-send -f "$T/body.txt" q
expect_rc 0 mq-receive q
expect_out $'file body\n'
# -f - is stdin (issue 15), not a file named '-'.
cd "$T" || exit 1
expect_rc 0 mq-send -f - q < <(printf 'stdin body\n')
expect_rc 0 mq-receive q
expect_out $'stdin body\n'
expect_rc 0 mq-send --file=- q < <(printf 'long form\n')
expect_rc 0 mq-receive q
expect_out $'long form\n'
expect_rc 2 mq-send -f - q argument < <(printf x)
expect_rc 1 mq-peek q
# A missing file is a usage error and sends nothing.
expect_rc 2 mq-send -f "$T/missing.txt" q
expect_err_match 'missing\.txt'
expect_rc 1 mq-peek q
# Two bodies at once: usage error.
expect_rc 2 mq-send -f "$T/body.txt" q argument
expect_err_match 'E_INVALIDARG'
expect_rc 1 mq-peek q

# From stdin, all of it, as one message.
expect_rc 0 mq-send q < <(printf 'line 1\nline 2\n')
expect_rc 0 mq-receive --all -0 q
expect_out $'line 1\nline 2\n\0'
expect_rc 0 mq-send q </dev/null
expect_rc 0 mq-receive q --template '{body_size}'
expect_out 0

# Binary: every byte value, NULs included, round-trips byte-exact by each route.
for i in $(seq 0 255); do printf "\\x$(printf %02x "$i")"; done >"$T/all"
printf '\0\0\0x\0' >>"$T/all"
head -c 100000 /dev/urandom >>"$T/all"
[ "$(stat -c %s "$T/all")" = 100261 ] || fail "test data is not 100261 bytes"
expect_rc 0 mq-send -f "$T/all" q
expect_rc 0 mq-send q <"$T/all"
expect_rc 0 mq-peek q -n 2 --template '{body_size} {body_encoding}\n'
expect_out $'100261 base64\n100261 base64\n'
mq-receive q >"$T/got1"
cmp "$T/all" "$T/got1" || fail "body sent with -f differs after receive"
mq-receive q >"$T/got2"
cmp "$T/all" "$T/got2" || fail "body sent on stdin differs after receive"
# The body of a NUL-free binary argument too.
arg=$(printf '\x01\x7f\x80\xfe\xff')
expect_rc 0 mq-send q "$arg"
mq-receive q >"$T/got3"
printf '\x01\x7f\x80\xfe\xff' | cmp - "$T/got3" || fail "binary argument body differs"
expect_rc 1 mq-peek q
expect_rc 0 mq-admin check

finish
