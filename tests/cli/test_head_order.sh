#!/bin/bash
# One head order (issue 15, section 1): mq-peek, mq-watch and mq-receive agree on the head of a
# queue that holds plain and conversation messages (priority, then arrival), --all included;
# --lookup-id 0 with --first/--last is accepted (the id is ignored, MSMQ's PEEK_FIRST/LAST);
# a receive aimed at a conversation message by --id, --lookup-id or --last fails with its own
# code (MQ_CONVERSATION_MESSAGE, exit 7) and leaves it in the queue.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create m
c=$(mq-send m -p 5 --conversation new 'conv p5')
expect_rc 0 mq-send m 'plain p3'
expect_rc 0 mq-send m -p 7 'plain p7'
expect_rc 0 mq-send m -p 1 'plain p1'
# Head order: p7 (3), conv p5 (1), plain p3 (2), p1 (4).
expect_rc 0 mq-peek m --all -l
expect_out $'plain p7\nconv p5\nplain p3\nplain p1\n'
expect_rc 0 mq-peek m --last --all -l
expect_out $'plain p1\nplain p3\nconv p5\nplain p7\n'
expect_rc 0 mq-peek m --lookup-id 3 --next -n 2 -l
expect_out $'conv p5\nplain p3\n'
expect_rc 0 mq-peek m --lookup-id 2 --prev -l
expect_out $'conv p5\n'
expect_rc 0 mq-peek m --lookup-id 0 --first -l
expect_out $'plain p7\n'
expect_rc 0 mq-peek m --lookup-id 0 --last -l
expect_out $'plain p1\n'
expect_rc 2 mq-peek m --lookup-id 0
expect_err_match 'lookup-id must be a positive number'
expect_rc 0 mq-receive m -l
expect_out $'plain p7\n'

# Now the conversation message is the head for all three.
expect_rc 0 mq-peek m -l
expect_out $'conv p5\n'
expect_rc 0 mq-watch m -t 0
expect_out $'arrived m 1\n'
expect_rc 0 mq-watch m -w 0 --format json
[ "$(jq -r .lookup_id "$T/out")" = 1 ] || fail "watch --format json: $(cat "$T/out")"

# A plain receive aimed at the conversation message: refused, the message stays.
expect_rc 7 mq-receive m --lookup-id 1
expect_err_match "^mq-receive: m: message 1 belongs to conversation $c: .*MQ_CONVERSATION_MESSAGE 0xE00E0015"
id=$(mq-peek m --template '{id}')
expect_rc 7 mq-receive m --id "$id"
expect_err_match 'MQ_CONVERSATION_MESSAGE'
expect_rc 0 mq-receive m --last -l
expect_out $'plain p1\n'
expect_rc 0 mq-receive m -l
expect_out $'conv p5\n'
expect_rc 0 mq-receive m -l
expect_out $'plain p3\n'
expect_rc 1 mq-receive m

# A conversation message last: --last aims at it.
expect_rc 0 mq-send m -p 6 'plain p6'
expect_rc 0 mq-send m --conversation "$c" 'conv again'
expect_rc 0 mq-peek m --all -l
expect_out $'plain p6\nconv again\n'
expect_rc 7 mq-receive m --last
expect_rc 0 mq-peek m --all -l
expect_out $'plain p6\nconv again\n'

# Named cursors walk the same order.
expect_rc 0 mq-peek m --cursor k --first -l
expect_out $'plain p6\n'
expect_rc 0 mq-peek m --cursor k --next -l
expect_out $'conv again\n'

# mq-watch --locked (AllowPeekWhenLocked): a Locked head is reported only with it.
expect_rc 0 mq-admin create l
expect_rc 0 mq-send l locked-one
tok=$(mq-receive l --lease 60s --json | jq -r .lease_token)
[ -n "$tok" ] || fail "no lease token"
expect_rc 1 mq-watch l -t 0
expect_rc 0 mq-watch l -t 0 --locked
expect_out $'arrived l 1\n'
expect_rc 2 mq-watch l --cursor k --first --locked
expect_rc 0 mq-admin ack "$tok"
expect_rc 0 mq-admin check
finish
