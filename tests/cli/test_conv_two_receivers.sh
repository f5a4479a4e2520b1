#!/bin/bash
# Two concurrent receivers never get messages of the same conversation group (issue 5): two
# mq-receive --all --exec over 20 groups of 10 messages; each CMD marks its group busy and
# notes any overlap; every group's messages come exactly once, in sequence order. Also two
# plain (non-transactional) receivers taking whole groups: each group's messages all go to
# one of them, in order.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q
send_groups() {
  local g
  for ((g = 0; g < 20; g++)); do
    seq 0 9 | mq-send -l --tx q --conversation new >/dev/null || fail "send failed"
  done
}
send_groups
mkdir "$T/busy"
CMD='g=$MQ_CONVERSATION_GROUP_ID; mkdir "$0/busy/$g.$$"
[ "$(ls "$0/busy" | grep -c "^$g\.")" = 1 ] || echo "OVERLAP $g" >>"$0/log"
echo "$g $MQ_MESSAGE_SEQUENCE_NUMBER $(cat)" >>"$0/log"; sleep 0.01
rmdir "$0/busy/$g.$$"'
start mq-receive q --all --exec sh -c "$CMD" "$T"
p1=$PID
start mq-receive q --all --exec sh -c "$CMD" "$T"
p2=$PID
expect_bg 0 "$p1"
expect_bg 0 "$p2"
grep OVERLAP "$T/log" && fail "a group was processed by both receivers at once"
check_log() {
  awk '$2 != $3 { bad = 1 } { if ($2 != next_seq[$1] + 0) bad = 1; next_seq[$1] = $2 + 1 }
       END { for (g in next_seq) { n++; if (next_seq[g] != 10) bad = 1 } if (n != 20) bad = 1; exit bad }' "$1" ||
    fail "$2: groups not complete and in order: $(head -c 300 "$1" | tr '\n' ';')"
}
check_log "$T/log" "--exec"
expect_rc 1 mq-peek q

# Plain receives: each takes a whole group in one transaction.
send_groups
start sh -c 'while mq-receive q --json >>"$0"; do :; done' "$T/a.json"
pa=$PID
start sh -c 'while mq-receive q --json >>"$0"; do :; done' "$T/b.json"
pb=$PID
expect_bg 0 "$pa"
expect_bg 0 "$pb"
for f in a b; do
  jq -r '"\(.conversation_group_id) \(.message_sequence_number) \(.body)"' "$T/$f.json" >"$T/$f.log"
done
cat "$T/a.log" "$T/b.log" >"$T/ab.log"
check_log "$T/ab.log" "plain"
# No group is split between the two receivers.
[ -z "$(comm -12 <(cut -d' ' -f1 "$T/a.log" | sort -u) <(cut -d' ' -f1 "$T/b.log" | sort -u))" ] ||
  fail "a group went to both plain receivers"
expect_rc 0 mq-admin check
expect_out ''
finish
