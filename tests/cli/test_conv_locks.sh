#!/bin/bash
# Conversation group locks (issue 5, item 2): a group stays locked while a transactional
# receive (--exec, --lease) holds its messages, so TOP(1) on a queue whose highest-priority
# group is locked returns the next group, and a plain receive skips it too; mq-admin
# conversations names the holder; the lock goes when the holder is SIGKILLed (the next receive
# gets the group's messages, in order); a --lease holds the group until ack or nack.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q
g1=$(mq-send q --conversation new -p 7 g1.0)
expect_rc 0 mq-send q --conversation "$g1" g1.1
g2=$(mq-send q --conversation new -p 3 g2.0)
expect_rc 0 mq-send q --conversation "$g2" g2.1
g3=$(mq-send q --conversation new -p 1 g3.0)

# HOLD: the command keeps its message until $T/release exists.
HOLD='cat >>"$0"; echo >>"$0"; while [ ! -e "$1" ]; do sleep 0.02; done'
start mq-receive q --top 1 --exec sh -c "$HOLD" "$T/held" "$T/release"
holder=$PID
for ((i = 0; i < 500; i++)); do [ -s "$T/held" ] && break; sleep 0.01; done
[ "$(cat "$T/held")" = g1.0 ] || fail "the first receiver got '$(cat "$T/held")', not g1.0"
# g1 is locked (g1.1 is still there): TOP(1) gets the next group.
expect_rc 0 mq-receive q --top 1 -l
expect_out $'g2.0\n'
expect_rc 1 mq-receive q --conversation "$g1"
expect_rc 1 mq-receive q --group "$g1" --wait 200ms
expect_rc 0 mq-admin conversations --json
tool=$(tool_pid "$holder")
[ "$(jq -r "select(.conversation_handle == \"$g1\") | [.locked, .lock_pid] | @tsv" "$T/out")" = "true	$tool" ] ||
  fail "conversations does not show g1 locked by pid $tool: $(cat "$T/out")"
[ "$(jq -r "select(.conversation_handle == \"$g2\") | .locked" "$T/out")" = false ] ||
  fail "g2 shows as locked"
# A plain receive skips the locked group as well.
expect_rc 0 mq-receive q -l
expect_out $'g2.1\n'
touch "$T/release"
expect_bg 0 "$holder"
expect_rc 0 mq-receive q -l
expect_out $'g1.1\n'
expect_rc 0 mq-receive q -l
expect_out $'g3.0\n'

# SIGKILL of the holder: the group's lock goes with it, and its messages come back in order.
k=$(mq-send q --conversation new k.0)
for i in 1 2 3; do expect_rc 0 mq-send q --conversation "$k" "k.$i"; done
rm -f "$T/held" "$T/release"
start mq-receive q --exec sh -c "$HOLD" "$T/held" "$T/release"
holder=$PID
for ((i = 0; i < 500; i++)); do [ -s "$T/held" ] && break; sleep 0.01; done
expect_rc 1 mq-receive q --group "$k"
expect_rc 0 mq-admin locks --json
[ "$(jq -c .lookup_ids "$T/out" | tr -d '[]' | tr , '\n' | wc -l)" = 4 ] ||
  fail "the holder does not hold the 4 messages of the group: $(cat "$T/out")"
holder_tool=$(tool_pid "$holder")
kill -KILL "$holder_tool"
expect_bg 137 "$holder"
wait_holder_gone "$holder_tool"
expect_rc 0 mq-receive q --group "$k" --json
[ "$(jq -r '[.body, .delivery_count, .abort_count] | @tsv' "$T/out" | tr '\n' ' ')" = "k.0	1	1 k.1	1	1 k.2	1	1 k.3	1	1 " ] ||
  fail "after SIGKILL: $(jq -c '[.body, .delivery_count]' "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-admin check
expect_out ''

# --lease: the group is locked until ack or nack; nack returns the messages in order.
l=$(mq-send q --conversation new l.0)
expect_rc 0 mq-send q --conversation "$l" l.1
m=$(mq-send q --conversation new m.0)
expect_rc 0 mq-receive q --lease 1m --top 1 -l
expect_out $'l.0\n'
token=$(cat "$T/err")
expect_rc 0 mq-receive q -l
expect_out $'m.0\n'
expect_rc 1 mq-receive q
expect_rc 0 mq-admin nack "$token"
expect_rc 0 mq-receive q -l
expect_out $'l.0\nl.1\n'
expect_rc 0 mq-admin check
expect_out ''
finish
