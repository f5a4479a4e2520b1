#!/bin/bash
# RETENTION ON keeps plain messages too (issue 15, section 1; CLI.md: a receive sets status 0
# and keeps the message): the received message is never received again, mq-peek --all shows
# it with status 0, stat counts it as retained, check agrees, purge removes it. The help of
# create and set and the completions say "every received message", not only a conversation's.
. "$(dirname "$0")/lib.sh"

for c in create set; do
  mq-admin $c --help | grep -A2 -- '--retention' | tr -s ' \n' ' ' >"$T/help"
  grep -q 'every received message' "$T/help" && ! grep -qi 'conversation messages' "$T/help" ||
    fail "mq-admin $c --help on --retention: $(cat "$T/help")"
done
grep -i 'retention' "$MQ_SRC"/completions/*/*mq-admin* | grep -i 'conversation messages' &&
  fail "a completion says RETENTION keeps only conversation messages"

expect_rc 0 mq-admin create q --retention on
expect_rc 0 mq-send q r1
expect_rc 0 mq-send q -p 5 r2
expect_rc 0 mq-receive q -l
expect_out $'r2\n'
expect_rc 0 mq-receive q --exec cat
expect_out 'r1'
expect_rc 1 mq-receive q
expect_rc 1 mq-watch q -t 0
expect_rc 0 mq-peek q --all --json
[ "$(jq -r '[.body, .status] | @tsv' "$T/out" | tr '\n' ' ')" = "r2	0 r1	0 " ] ||
  fail "retained rows: $(jq -c '[.body, .status]' "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-admin stat q --json
[ "$(jq -r '[.messages, .retained] | @tsv' "$T/out")" = "2	2" ] || fail "stat: $(cat "$T/out")"
expect_rc 0 mq-admin check
expect_out ''
# A new message is received before nothing else; the retained ones stay behind it.
expect_rc 0 mq-send q r3
expect_rc 0 mq-peek q -l
expect_out $'r3\n'
expect_rc 0 mq-receive q -l
expect_out $'r3\n'
expect_rc 0 mq-admin purge q
expect_rc 1 mq-peek q
expect_rc 0 mq-admin stat q --json
[ "$(jq -r '[.messages, .retained] | @tsv' "$T/out")" = "0	0" ] || fail "stat after purge: $(cat "$T/out")"
# RETENTION OFF: removed as before.
expect_rc 0 mq-admin set q --retention off
expect_rc 0 mq-send q gone
expect_rc 0 mq-receive q -l
expect_rc 1 mq-peek q --all -l
expect_rc 0 mq-admin check
expect_out ''
finish
