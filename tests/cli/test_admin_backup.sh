#!/bin/bash
# mq-admin backup DIR: a consistent hot copy taken while senders keep sending; it opens as
# a store, passes check, and holds a count between the counts before and after.
. "$(dirname "$0")/lib.sh"

count() { mq-admin "$@" --json | jq -r .messages; }

expect_rc 0 mq-admin create q
expect_rc 0 mq-send -l q < <(seq -f 'first-%g' 1 1000)

# A quiet store: an exact copy.
expect_rc 0 mq-admin backup "$T/b1"
expect_out ''
[ "$(count -s "$T/b1" stat q)" = 1000 ] || fail "backup of a quiet store has $(count -s "$T/b1" stat q) messages"
expect_rc 0 mq-admin -s "$T/b1" check
expect_rc 0 mq-peek -s "$T/b1" q --last
expect_out first-1000
run stat -c %a "$T/b1" "$T/b1/data.mdb"
expect_out $'700\n600\n'
# The copy is independent of the original.
expect_rc 0 mq-receive -s "$T/b1" q --all -0
[ "$(count stat q)" = 1000 ] || fail "receiving from the backup changed the original"

# Into an existing empty directory: fine. Into a non-empty one or a file: refused, untouched.
mkdir "$T/empty"
expect_rc 0 mq-admin backup "$T/empty"
expect_rc 0 mq-admin -s "$T/empty" check
mkdir "$T/full"
echo keep >"$T/full/file"
expect_rc 2 mq-admin backup "$T/full"
expect_err_match 'full'
run ls -A "$T/full"
expect_out $'file\n'
expect_rc 2 mq-admin backup "$T/full/file"
expect_rc 2 mq-admin backup "$T/b1"

# While two senders keep sending.
: >"$T/errors"
sender() {
  local i
  for i in $(seq 1 400); do
    seq -f "$1-$i-%g" 1 10 | mq-send -l q || echo "send exited $?" >>"$T/errors"
    [ -e "$T/stop" ] && break
  done
}
sender A & p1=$!
sender B & p2=$!
sleep 0.3
before=$(count stat q)
expect_rc 0 mq-admin backup "$T/hot"
after=$(count stat q)
touch "$T/stop"
wait $p1 $p2
[ -s "$T/errors" ] && fail "senders failed during the backup: $(head -3 "$T/errors")"
[ "$before" -lt "$after" ] || echo "note: the senders did not send during the backup ($before, $after)"
copied=$(count -s "$T/hot" stat q)
[ "$copied" -ge "$before" ] && [ "$copied" -le "$after" ] ||
  fail "the hot backup has $copied messages, not between $before and $after"
expect_rc 0 mq-admin -s "$T/hot" check
expect_out ''
expect_rc 0 mq-admin check
# The copy is a prefix of each sender's stream: no message torn or out of order.
mq-peek -s "$T/hot" q --all -l >"$T/hot.txt"
[ "$(wc -l <"$T/hot.txt")" = "$copied" ] || fail "the hot backup's peek and stat disagree"
head -n 1000 "$T/hot.txt" | cmp -s - <(seq -f 'first-%g' 1 1000) || fail "the hot backup lost the first messages"
for s in A B; do
  grep "^$s-" "$T/hot.txt" >"$T/hot.$s"
  mq-peek q --all -l | grep "^$s-" | head -n "$(wc -l <"$T/hot.$s")" | cmp -s - "$T/hot.$s" ||
    fail "the hot backup's messages of sender $s are not a prefix of the original's"
done

finish
