#!/bin/bash
# A failed --exec on a conversation group (issue 5, item 2) rolls back every message of the
# transaction: they return to their group in their order, delivery_count and abort_count
# rise; CMD ran once per message, in order, up to the failure (--batch: once for all).
# A rollback with the poison action moves the messages out of the group.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q --max-retries 3
c=$(mq-send q --conversation new c.0)
for i in 1 2 3; do expect_rc 0 mq-send q --conversation "$c" "c.$i"; done
d=$(mq-send q --conversation new --group "$c" -p 5 d.0)
expect_rc 0 mq-peek q --all --json
jq -c '[.lookup_id, .body]' "$T/out" >"$T/before"

# CMD fails on c.1: d.0 (priority 5) and c.0 ran, then c.1 failed; nothing is removed.
expect_rc 8 mq-receive q --exec sh -c 'b=$(cat); echo "$b" >>"$0"; [ "$b" != c.1 ]' "$T/ran"
expect_err_match "^mq-receive: q: sh exited with status 1; 5 messages rolled back"
[ "$(tr '\n' ' ' <"$T/ran")" = "d.0 c.0 c.1 " ] || fail "CMD ran on: $(tr '\n' ' ' <"$T/ran")"
expect_rc 0 mq-peek q --all --json
jq -c '[.lookup_id, .body]' "$T/out" >"$T/after"
cmp -s "$T/before" "$T/after" || fail "order after rollback: $(tr '\n' ' ' <"$T/after")"
[ "$(jq -r '[.delivery_count, .abort_count] | @tsv' "$T/out" | sort -u)" = "1	1" ] ||
  fail "counts after rollback: $(jq -c '[.delivery_count, .abort_count]' "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-admin check
expect_out ''

# --batch: one run with all of them; a failure rolls all back.
expect_rc 8 mq-receive q --batch --exec sh -c 'cat >"$0"; exit 2' "$T/batch"
[ "$(tr '\n' ' ' <"$T/batch")" = "d.0 c.0 c.1 c.2 c.3 " ] || fail "--batch got: $(cat "$T/batch")"
expect_rc 0 mq-peek q --all --json
jq -c '[.lookup_id, .body]' "$T/out" >"$T/after"
cmp -s "$T/before" "$T/after" || fail "order after --batch rollback changed"

# Success commits them all, in order.
expect_rc 0 mq-receive q --exec sh -c 'cat >>"$0"; echo >>"$0"' "$T/ok"
[ "$(tr '\n' ' ' <"$T/ok")" = "d.0 c.0 c.1 c.2 c.3 " ] || fail "commit run: $(cat "$T/ok")"
expect_rc 1 mq-peek q

# Poison: the third rollback moves the group's messages to q;poison as plain messages.
e=$(mq-send q --conversation new e.0)
for i in 1 2 3; do expect_rc 8 mq-receive q --exec false; done
expect_rc 1 mq-peek q
expect_rc 0 mq-peek 'q;poison' --all -l
expect_out $'e.0\n'
expect_rc 0 mq-admin check
expect_out ''
# Requeued, it is a conversation message in its group again.
expect_rc 0 mq-admin requeue 'q;poison'
expect_rc 0 mq-receive q --conversation "$e" -l
expect_out $'e.0\n'
expect_rc 0 mq-admin check
expect_out ''
finish
