#!/bin/bash
# Conversation groups under concurrency (issue 5): 8 receivers (mq-receive --exec, half taking
# whole groups, half TOP(7) at a time) over 100 groups of 100 messages each: every group's
# messages are processed exactly once and in sequence order, and no group is ever processed by
# two receivers at once. Then the same through mq-watch --max-readers 4 as the activator.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

GROUPS_N=${GROUPS_N:-100}
PER=${PER:-100}
expect_rc 0 mq-admin create q --max-retries 0
for ((g = 0; g < GROUPS_N; g++)); do
  seq 0 $((PER - 1)) | mq-send -l --tx q --conversation new -p $((g % 8)) >/dev/null ||
    fail "send of group $g failed"
done
expect_rc 0 mq-admin stat q --json
[ "$(jq -r .messages "$T/out")" = $((GROUPS_N * PER)) ] || fail "sent $(jq -r .messages "$T/out")"

mkdir "$T/busy"
# CMD: marks its group busy (mkdir fails if another receiver is inside the same group), logs
# "group seq body", and leaves.
CMD='g=$MQ_CONVERSATION_GROUP_ID; mkdir "$0/busy/$g.$$" 2>/dev/null
n=$(ls "$0/busy" | grep -c "^$g\.")
[ "$n" = 1 ] || echo "OVERLAP $g" >>"$0/log"
echo "$g $MQ_MESSAGE_SEQUENCE_NUMBER $(cat)" >>"$0/log"
rmdir "$0/busy/$g.$$"'
pids=()
BG_TIMEOUT=600
for w in 1 2 3 4; do
  start mq-receive q --all --exec sh -c "$CMD" "$T"
  pids+=("$PID")
  # Until the queue has nothing for it (exit 1); any other failure shows in the counts.
  start sh -c 'while mq-receive q --top 7 --exec sh -c "$1" "$2"; do :; done' sh "$CMD" "$T"
  pids+=("$PID")
done
for p in "${pids[@]}"; do expect_bg 0 "$p"; done
expect_rc 1 mq-peek q
grep -c OVERLAP "$T/log" >/dev/null && fail "a group was processed by two receivers at once: $(grep OVERLAP "$T/log" | head -3)"
[ "$(wc -l <"$T/log")" = $((GROUPS_N * PER)) ] || fail "processed $(wc -l <"$T/log") messages, expected $((GROUPS_N * PER))"
# Per group, in log order: 0..PER-1 exactly, and body == sequence number.
awk -v per="$PER" '
  $2 != $3 { print "body " $3 " has sequence number " $2; bad = 1 }
  { if ($2 != next_seq[$1] + 0) { print "group " $1 ": " $2 " after " next_seq[$1] - 1; bad = 1 }
    next_seq[$1] = $2 + 1 }
  END { for (g in next_seq) { n++; if (next_seq[g] != per) { print "group " g " ended at " next_seq[g]; bad = 1 } }
        if (n != '"$GROUPS_N"') { print n " groups"; bad = 1 } exit bad }' "$T/log" >"$T/bad" ||
  fail "order: $(head -5 "$T/bad" | tr '\n' ';')"
expect_rc 0 mq-admin check
expect_out ''

# The activator: mq-watch --max-readers 4 over 20 groups of 20.
rm -f "$T/log"
start mq-watch q --max-readers 4 --exec sh -c "$CMD" "$T"
watcher=$PID
for ((g = 0; g < 20; g++)); do
  seq 0 19 | mq-send -l q --conversation new >/dev/null || fail "send failed"
done
for ((i = 0; i < 3000; i++)); do
  [ "$(cat "$T/log" 2>/dev/null | wc -l)" -ge 400 ] && break
  sleep 0.02
done
kill -TERM "$(tool_pid "$watcher")"
expect_bg 0 "$watcher"
grep -c OVERLAP "$T/log" >/dev/null && fail "mq-watch: a group was processed by two receivers at once"
awk '{ if ($2 != next_seq[$1] + 0) { print "group " $1 ": " $2; bad = 1 } next_seq[$1] = $2 + 1 }
     END { for (g in next_seq) { n++; if (next_seq[g] != 20) bad = 1 } if (n != 20) bad = 1; exit bad }' \
  "$T/log" >"$T/bad" || fail "mq-watch order: $(head -5 "$T/bad" | tr '\n' ';') ($(wc -l <"$T/log") lines)"
expect_rc 1 mq-peek q
expect_rc 0 mq-admin check
expect_out ''
finish
