#!/bin/bash
# mq-receive --exec: a rollback returns the message to the same place in the delivery order
# (priority, then lookup id), ahead of later arrivals; MQ_DELIVERY_COUNT counts deliveries
# (1, 2, 3, ...), abort_count counts rollbacks; exit 8 on a failed command or a command
# killed by a signal; exit 0 commits; -n stops at the first failure; --batch rolls back all.
. "$(dirname "$0")/lib.sh"

order() {  # the queue as lookup_id:priority:body lines, in delivery order
  mq-peek q --all --template '{lookup_id}:{priority}:{body}
'
}

expect_rc 0 mq-admin create q --max-retries 0   # never poison here
for pb in 1:a 5:b 3:c 5:d 3:e 0:f; do
  expect_rc 0 mq-send -p "${pb%%:*}" q "${pb#*:}"
done
order >"$T/order0"
[ "$(cut -d: -f3 "$T/order0" | tr -d '\n')" = bdceaf ] ||
  fail "delivery order is $(cut -d: -f3 "$T/order0" | tr -d '\n'), expected bdceaf"

# CMD records what it saw, then fails.
REC='printf "%s %s %s %s\n" "$MQ_LOOKUP_ID" "$MQ_DELIVERY_COUNT" "$MQ_ABORT_COUNT" "$(cat)" >>"$0"'
head_lookup=$(head -n1 "$T/order0" | cut -d: -f1)
for i in 1 2 3; do
  expect_rc 8 mq-receive q --exec sh -c "$REC; exit 3" "$T/seen"
  expect_out ''
  expect_err_match "^mq-receive: q: sh exited with status 3; message $head_lookup rolled back \(MQ_EXEC_FAILED 0xE00E0004\)$"
  order >"$T/order"
  cmp -s "$T/order0" "$T/order" ||
    fail "after rollback $i the order changed: $(diff "$T/order0" "$T/order" | tr '\n' ' ')"
done
printf '%s 1 0 b\n%s 2 1 b\n%s 3 2 b\n' "$head_lookup" "$head_lookup" "$head_lookup" >"$T/want"
cmp -s "$T/want" "$T/seen" || fail "CMD saw '$(cat "$T/seen")', expected '$(cat "$T/want")'"
expect_rc 0 mq-peek q --json
[ "$(jq -c '[.body, .delivery_count, .abort_count, .lookup_id, .status]' "$T/out")" = "[\"b\",3,3,$head_lookup,1]" ] ||
  fail "head after 3 rollbacks: $(jq -c '[.body, .delivery_count, .abort_count, .lookup_id, .status]' "$T/out")"

# A command killed by a signal rolls back too (exit 8, the signal named).
expect_rc 8 mq-receive q --exec sh -c 'kill -KILL $$'
expect_err_match "^mq-receive: q: sh was killed by signal 9 .*message $head_lookup rolled back"
order >"$T/order"
cmp -s "$T/order0" "$T/order" || fail "after a signal rollback the order changed"

# A rollback returns the message ahead of messages of its priority that arrived meanwhile:
# while CMD holds b, another priority-5 message g arrives; after the rollback b is still first.
expect_rc 8 mq-receive q --exec sh -c 'mq-send -p 5 q g && exit 1'
order >"$T/order"
[ "$(cut -d: -f3 "$T/order" | tr -d '\n')" = bdgceaf ] ||
  fail "with g sent during the transaction the order is $(cut -d: -f3 "$T/order" | tr -d '\n'), expected bdgceaf"
expect_rc 0 mq-peek q --json
[ "$(jq -c '[.body, .delivery_count, .abort_count]' "$T/out")" = '["b",5,5]' ] ||
  fail "head: $(jq -c '[.body, .delivery_count, .abort_count]' "$T/out"), expected b, 5 deliveries, 5 aborts"

# A rollback of a message from the middle (--lookup-id) returns it to the middle.
c_lookup=$(grep ':c$' "$T/order0" | cut -d: -f1)
expect_rc 8 mq-receive q --lookup-id "$c_lookup" --exec false
order >"$T/order2"
cmp -s "$T/order" "$T/order2" || fail "rolling back c moved it: $(tr '\n' ' ' <"$T/order2")"

# exit 0 commits: b is removed at its 6th delivery; the rest keep their order.
: >"$T/seen"
expect_rc 0 mq-receive q --exec sh -c "$REC" "$T/seen"
expect_out ''
[ "$(cat "$T/seen")" = "$head_lookup 6 5 b" ] || fail "committing CMD saw '$(cat "$T/seen")'"
order >"$T/order3"
[ "$(cut -d: -f3 "$T/order3" | tr -d '\n')" = dgceaf ] ||
  fail "after the commit the order is $(cut -d: -f3 "$T/order3" | tr -d '\n'), expected dgceaf"

# -n 4 stops at the first failure: d and g commit, c fails (rolled back), e and a untouched.
: >"$T/seen"
expect_rc 8 mq-receive q -n 4 --exec sh -c "$REC"'; [ "$MQ_PRIORITY" = 5 ]' "$T/seen"
[ "$(cut -d' ' -f4 "$T/seen" | tr -d '\n')" = dgc ] || fail "-n 4 ran CMD for $(cut -d' ' -f4 "$T/seen" | tr -d '\n'), expected dgc"
expect_rc 0 mq-peek q --all --json
[ "$(jq -c '[.body, .delivery_count, .abort_count]' "$T/out" | tr -d '\n')" = '["c",2,2]["e",0,0]["a",0,0]["f",0,0]' ] ||
  fail "after -n 4: $(jq -c '[.body, .delivery_count, .abort_count]' "$T/out" | tr -d '\n')"

# --batch: one run with all the bodies; a failure returns every one of them, in place.
: >"$T/seen"
expect_rc 8 mq-receive q --all --batch --exec sh -c 'cat >"$0"; echo "$MQ_COUNT" >>"$0"; exit 1' "$T/seen"
expect_err_match '^mq-receive: q: sh exited with status 1; 4 messages rolled back'
[ "$(tr '\n' ' ' <"$T/seen")" = 'c e a f 4 ' ] || fail "--batch CMD got '$(tr '\n' ' ' <"$T/seen")'"
expect_rc 0 mq-peek q --all --json
[ "$(jq -c '[.body, .delivery_count, .abort_count]' "$T/out" | tr -d '\n')" = '["c",3,3]["e",1,1]["a",1,1]["f",1,1]' ] ||
  fail "after the --batch rollback: $(jq -c '[.body, .delivery_count, .abort_count]' "$T/out" | tr -d '\n')"
expect_rc 0 mq-receive q --all --batch --exec true
expect_rc 1 mq-peek q
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.messages, .locked, .delayed]' "$T/out")" = '[0,0,0]' ] || fail "stat after all: $(cat "$T/out")"
expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-admin check
expect_out ''

finish
