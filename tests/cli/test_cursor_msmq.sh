#!/bin/bash
# Cursors as MSMQ documents them ("Cursor Behavior", seed 000), walked as a scenario (issue
# 24): after a cursor is created PEEK_CURRENT is its first move, to the first message
# location, even in an empty queue (its next PEEK_NEXT is then legal and returns the first
# message); PEEK_NEXT walks to the end; a cursor waiting at the end moves to the next message
# that arrives, whatever its priority (mq-peek --next --wait and mq-watch --next); and
# mq-watch's illegal PEEK_NEXT with timeout 0 is the ArrivedError MQ_ERROR_MESSAGE_NOT_FOUND.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

TPL='{body}\n'
expect_rc 0 mq-admin create q

# Created, then PEEK_CURRENT in an empty queue: nothing to peek, but the cursor is placed.
expect_rc 1 mq-peek q --cursor c --current --template "$TPL"
expect_err_match 'MQ_ERROR_MESSAGE_NOT_FOUND'
expect_rc 0 mq-admin cursors
expect_out $'q\tc\tstart\tidle\n'
# PEEK_NEXT from there is legal: it waits for and returns the first message.
start mq-peek q --cursor c --next --wait 10s --template "$TPL"
wait_blocked "$PID" poll
expect_rc 0 mq-send q first
expect_bg 0 "$PID"
expect_out $'first\n'

# A new cursor on a queue with messages: PEEK_CURRENT peeks the first message.
expect_rc 0 mq-send q second
expect_rc 0 mq-send -p 5 q urgent
expect_rc 0 mq-peek q --cursor d --current --template "$TPL"
expect_out $'urgent\n'
expect_rc 0 mq-peek q --cursor d --next --template "$TPL"
expect_out $'first\n'
expect_rc 0 mq-peek q --cursor d --next --template "$TPL"
expect_out $'second\n'
# At the end: without a wait, nothing; the cursor stays.
expect_rc 1 mq-peek q --cursor d --next --template "$TPL"
expect_rc 0 mq-peek q --cursor d --current --template "$TPL"
expect_out $'second\n'
# Waiting at the end: a message of higher priority arrives, placed before the cursor in
# delivery order; the waiting cursor moves to it.
start mq-watch q --cursor next --cursor-name d -w 4s
wait_blocked "$PID" poll
expect_rc 0 mq-send -p 7 q late-but-high
expect_bg 0 "$PID"
[[ $(cat "$T/out") =~ ^arrived\ q\ [0-9]+$ ]] || fail "mq-watch --next at the end: $(cat "$T/out")"
expect_rc 0 mq-peek q --cursor d --current --template "$TPL"
expect_out $'late-but-high\n'
# The walk goes on from its place in delivery order.
expect_rc 0 mq-peek q --cursor d --next --template "$TPL"
expect_out $'urgent\n'

# Seed 000: PEEK_NEXT on a cursor never moved, ReceiveTimeout 0: ArrivedError
# MQ_ERROR_MESSAGE_NOT_FOUND on stdout, exit 1.
expect_rc 1 mq-watch q --cursor next --cursor-name never -w 0
expect_out $'error q MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088\n'
expect_out_err=$(cat "$T/err")
[ -z "$expect_out_err" ] || fail "the ArrivedError also wrote stderr: $expect_out_err"

expect_rc 0 mq-admin check
finish
