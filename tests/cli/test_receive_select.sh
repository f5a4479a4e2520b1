#!/bin/bash
# Which messages mq-peek and mq-receive take: -n, --all, --top, delivery order (priority,
# then arrival), --lookup-id with --next/--prev, --first, --last, --id and --correlation.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq -r .messages; }
t='{lookup_id}{body} '

# Priorities: higher first, FIFO inside a priority. Lookup ids 1..9 in sending order.
expect_rc 0 mq-admin create q
for m in 3:a 5:b 3:c 7:d 5:e 0:f 3:g 7:h 0:i; do
  expect_rc 0 mq-send q -p "${m%%:*}" "${m#*:}"
done
expect_rc 0 mq-peek q --all --template "$t"
expect_out '4d 8h 2b 5e 1a 3c 7g 6f 9i '

# Counts: default 1, -n N, --top N, --all; more than there are is fine.
expect_rc 0 mq-peek q --template "$t"
expect_out '4d '
expect_rc 0 mq-peek q -n 3 --template "$t"
expect_out '4d 8h 2b '
expect_rc 0 mq-peek q --top 2 --template "$t"
expect_out '4d 8h '
expect_rc 0 mq-peek q -n 50 --template "$t"
expect_out '4d 8h 2b 5e 1a 3c 7g 6f 9i '
expect_rc 2 mq-peek q -n 0
expect_rc 2 mq-peek q -n 2 --all
expect_rc 2 mq-peek q --top 2 -n 2

# By lookup id: that message onwards in delivery order, or the ones after/before it.
expect_rc 0 mq-peek q --lookup-id 2 --template "$t"
expect_out '2b '
expect_rc 0 mq-peek q --lookup-id 2 -n 3 --template "$t"
expect_out '2b 5e 1a '
expect_rc 0 mq-peek q --lookup-id 2 --next --template "$t"
expect_out '5e '
expect_rc 0 mq-peek q --lookup-id 2 --next -n 2 --template "$t"
expect_out '5e 1a '
expect_rc 0 mq-peek q --lookup-id 2 --prev --template "$t"
expect_out '8h '
expect_rc 0 mq-peek q --lookup-id 1 --prev --all --template "$t"
expect_out '5e 2b 8h 4d '
expect_rc 0 mq-peek q --first --template "$t"
expect_out '4d '
expect_rc 0 mq-peek q --first -n 2 --template "$t"
expect_out '4d 8h '
expect_rc 0 mq-peek q --last --template "$t"
expect_out '9i '
expect_rc 0 mq-peek q --last -n 3 --template "$t"
expect_out '9i 6f 7g '
# Nothing there: 1.
for sel in "--lookup-id 99" "--lookup-id 99 --next" "--lookup-id 99 --prev" \
           "--lookup-id 4 --prev" "--lookup-id 9 --next"; do
  expect_rc 1 mq-peek q $sel
  expect_err_match '^mq-peek: q: .*MQ_ERROR_MESSAGE_NOT_FOUND'
  expect_out ''
  expect_rc 1 mq-receive q $sel
  expect_err_match 'MQ_ERROR_MESSAGE_NOT_FOUND'
done
# Lookup ids start at 1: 0 names no message, it is not "the head".
expect_rc 2 mq-peek q --lookup-id 0
expect_out ''
expect_rc 2 mq-peek q --lookup-id 0 --next
expect_rc 2 mq-peek q --lookup-id x
expect_rc 2 mq-peek q --next
expect_rc 2 mq-peek q --first --last
[ "$(count q)" = 9 ] || fail "peeks and failed receives changed the count"

# Receive by lookup id takes exactly that one (or those).
expect_rc 0 mq-receive q --lookup-id 3 --template "$t"
expect_out '3c '
expect_rc 1 mq-peek q --lookup-id 3
expect_rc 0 mq-receive q --lookup-id 2 --next -n 2 --template "$t"
expect_out '5e 1a '
expect_rc 0 mq-receive q --last --template "$t"
expect_out '9i '
expect_rc 0 mq-peek q --all --template "$t"
expect_out '4d 8h 2b 7g 6f '
expect_rc 0 mq-receive q --top 2 --template "$t"
expect_out '4d 8h '
expect_rc 0 mq-receive q --all --template "$t"
expect_out '2b 7g 6f '
[ "$(count q)" = 0 ] || fail "receive --all left $(count q) messages"

# By message id.
expect_rc 0 mq-send --print-id -l q < <(printf 'one\ntwo\nthree\n')
mapfile -t ids <"$T/out"
expect_rc 0 mq-peek q --id "${ids[1]}"
expect_out two
expect_rc 0 mq-receive q --id "${ids[1]}"
expect_out two
expect_rc 1 mq-receive q --id "${ids[1]}"
expect_err_match 'MQ_ERROR_MESSAGE_NOT_FOUND'
expect_rc 0 mq-peek q --all -l
expect_out $'one\nthree\n'
expect_rc 2 mq-peek q --id not-an-id
expect_err_match 'E_INVALIDARG'
# An id of another queue is not found in this one.
expect_rc 0 mq-send --create --print-id other elsewhere
other_id=$(cat "$T/out")
expect_rc 1 mq-peek q --id "$other_id"
expect_rc 1 mq-receive q --id "$other_id"
expect_rc 0 mq-peek other --id "$other_id"
expect_out elsewhere
expect_rc 0 mq-admin purge q

# By correlation id: only the matching ones, in delivery order.
c1=1111111111111111111111111111111111111111
c2=2222222222222222222222222222222222222222
expect_rc 0 mq-send q -c "$c1" r1
expect_rc 0 mq-send q r-none
expect_rc 0 mq-send q -c "$c2" r2
expect_rc 0 mq-send q -p 6 -c "$c1" r3
expect_rc 0 mq-send q -c "$c1" r4
expect_rc 0 mq-peek q --correlation "$c1" --all -l
expect_out $'r3\nr1\nr4\n'
expect_rc 0 mq-peek q --correlation "$c1" -l
expect_out $'r3\n'
expect_rc 0 mq-receive q --correlation "$c1" -n 2 -l
expect_out $'r3\nr1\n'
expect_rc 0 mq-receive q --correlation "$c2" -l
expect_out $'r2\n'
expect_rc 1 mq-receive q --correlation "$c2"
expect_err_match 'MQ_ERROR_MESSAGE_NOT_FOUND'
expect_rc 1 mq-peek q --correlation 3333333333333333333333333333333333333333
expect_rc 2 mq-peek q --correlation nothex
expect_rc 0 mq-peek q --all -l
expect_out $'r-none\nr4\n'
expect_rc 0 mq-admin check

finish
