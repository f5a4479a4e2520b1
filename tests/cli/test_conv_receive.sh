#!/bin/bash
# Service Broker RECEIVE in mq-receive (issue 5, item 2): without WHERE the group with the
# highest priority goes first, all of it (all of one conversation before the next,
# conversations by descending priority, each by ascending sequence number); --top N takes at
# most N; plain messages keep MSMQ order and -n; --conversation/--group are the WHERE clause,
# unknown ones exit 3; WAITFOR with --wait (timeout: exit 1; the queue set OFF or deleted while
# waiting: exit 5 at once); RECEIVE on a queue that is OFF: exit 5.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create other
expect_rc 0 mq-send q p1
a1=$(mq-send q --conversation new -p 3 a1.0)
expect_rc 0 mq-send q --conversation "$a1" a1.1
a2=$(mq-send q --conversation new --group "$a1" -p 5 a2.0)
expect_rc 0 mq-send q --conversation "$a2" a2.1
b=$(mq-send q --conversation new -p 7 b.0)
expect_rc 0 mq-send q --conversation "$b" b.1
expect_rc 0 mq-send q p2
# The conversation's priority is its first message's.
expect_rc 0 mq-peek q --all --json
[ "$(jq -r 'select(.body == "a2.1") | .priority' "$T/out")" = 5 ] || fail "a2.1 did not take its conversation's priority"
# Peek lists them in delivery order, priority then arrival, plain and conversation alike
# (issue 15); mq-receive then takes each group whole.
[ "$(jq -r .body "$T/out" | tr '\n' ' ')" = "b.0 b.1 a2.0 a2.1 p1 a1.0 a1.1 p2 " ] ||
  fail "peek order: $(jq -r .body "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-admin check
expect_out ''

expect_rc 0 mq-receive q -l --top 1
expect_out $'b.0\n'
expect_rc 0 mq-receive q -l
expect_out $'b.1\n'
expect_rc 0 mq-receive q --json
[ "$(jq -r '[.body, .message_sequence_number, .conversation_group_id] | @tsv' "$T/out" | tr '\n' ' ')" = \
  "a2.0	0	$a1 a2.1	1	$a1 a1.0	0	$a1 a1.1	1	$a1 " ] ||
  fail "group receive: $(jq -c '[.body, .message_sequence_number]' "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-receive q -l
expect_out $'p1\n'
expect_rc 0 mq-receive q -l
expect_out $'p2\n'
expect_rc 1 mq-receive q
expect_out ''

# Plain messages of higher priority go before a group; -n takes several plain ones (plain
# MSMQ semantics: the plain messages in their order).
c=$(mq-send q --conversation new -p 4 c.0)
expect_rc 0 mq-send q --conversation "$c" c.1
expect_rc 0 mq-send q -p 6 hi1
expect_rc 0 mq-send q -p 6 hi2
expect_rc 0 mq-send q -p 1 lo
expect_rc 0 mq-receive q -l -n 2
expect_out $'hi1\nhi2\n'
expect_rc 0 mq-receive q -l -n 5
expect_out $'c.0\nc.1\n'
expect_rc 0 mq-receive q -l --all
expect_out $'lo\n'
expect_rc 0 mq-send q -p 6 hi3
expect_rc 0 mq-send q -p 1 lo2
c2=$(mq-send q --conversation new -p 4 c2.0)
expect_rc 0 mq-receive q -l -n 5
expect_out $'hi3\nlo2\n'
expect_rc 0 mq-receive q -l -n 5
expect_out $'c2.0\n'

# WHERE.
d=$(mq-send q --conversation new d.0)
expect_rc 0 mq-send q --conversation "$d" d.1
e=$(mq-send q --conversation new --group "$d" e.0)
f=$(mq-send q --conversation new -p 7 f.0)
expect_rc 0 mq-receive q -l --conversation "$e"
expect_out $'e.0\n'
expect_rc 0 mq-receive q -l --group "$d" --top 1
expect_out $'d.0\n'
expect_rc 1 mq-receive q --conversation "$e"
expect_rc 3 mq-receive q --conversation "$(cat /proc/sys/kernel/random/uuid)"
expect_err_match "^mq-receive: q: no conversation [0-9a-f-]{36} in this queue \(MQ_CONVERSATION_NOT_FOUND 0xE00E0010\)$"
expect_rc 3 mq-receive other --conversation "$d"
expect_err_match "^mq-receive: other: no conversation $d in this queue"
expect_rc 3 mq-receive other --group "$d"
expect_err_match "^mq-receive: other: no conversation group $d in this queue"
expect_rc 3 mq-receive q --group "$(cat /proc/sys/kernel/random/uuid)" --wait 5s
expect_rc 2 mq-receive q --group bogus
expect_err_match "^mq-receive: invalid conversation group id 'bogus': expected a UUID"
expect_rc 2 mq-receive q --group "$d" --conversation "$d"
expect_rc 2 mq-receive q --conversation "$d" --last
expect_rc 0 mq-receive q -l --conversation "$f"
expect_out $'f.0\n'

# RECEIVE on a queue that is OFF fails.
expect_rc 0 mq-admin set q --status off
expect_rc 5 mq-receive q
expect_err_match "queue is disabled \(status OFF\) \(MQ_ERROR_QUEUE_NOT_ACTIVE"
expect_rc 5 mq-receive q --conversation "$d"
expect_rc 5 mq-receive q --group "$d" --exec true
expect_rc 0 mq-admin set q --status on

# WAITFOR: a timeout is an empty result, exit 1; an arrival in the group wakes the waiter.
expect_rc 0 mq-receive q -l --group "$d"
expect_out $'d.1\n'
expect_rc 1 mq-receive q --group "$d" --wait 300ms
expect_err_match "timed out waiting for a message \(MQ_ERROR_IO_TIMEOUT"
start mq-receive q --conversation "$d" --wait 20s -l
wait_blocked "$PID" poll
expect_rc 0 mq-send q --conversation "$d" d.2
expect_bg 0 "$PID"
expect_out $'d.2\n'
start mq-receive q --wait 20s -l
wait_blocked "$PID" poll
expect_rc 0 mq-send q --conversation "$e" e.1
expect_bg 0 "$PID"
expect_out $'e.1\n'
# Set OFF, or deleted, while waiting: an error at once.
start mq-receive q --group "$d" --wait 20s
p1=$PID
wait_blocked "$p1" poll
expect_rc 0 mq-admin set q --status off
expect_bg 5 "$p1"
expect_err_match "MQ_ERROR_QUEUE_NOT_ACTIVE"
expect_rc 0 mq-admin set q --status on
start mq-receive q --conversation "$d" --wait 20s
p1=$PID
wait_blocked "$p1" poll
expect_rc 0 mq-admin delete q
expect_bg 5 "$p1"
expect_err_match "queue was deleted while waiting \(MQ_ERROR_QUEUE_DELETED"
expect_rc 0 mq-admin conversations
expect_out ''
expect_rc 0 mq-admin check
expect_out ''
finish
