#!/bin/bash
# mq-send to several queues at once (issue 26, item 7): 'a,b,LINK:c' and MSMQ's
# multiple-element format names put a copy in each queue in one transaction, or nothing at
# all when any destination refuses (a full quota, a disabled or missing queue), with the exit
# status of that queue's refusal, and under SIGKILL. Each copy has an id of its own;
# --print-id prints them, each message's copies in the order of the list.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | jq .messages; }
ids_of() { mq-peek "$1" --all --json | jq -r .id; }

expect_rc 0 mq-admin create a
expect_rc 0 mq-admin create b
expect_rc 0 mq-admin link add L --via "exit 3"

# 1. A copy in each: two local queues and a remote one; three ids, each its copy's.
expect_rc 0 mq-send 'a,b,L:c' --print-id --label hello body1
mapfile -t printed <"$T/out"
[ "${#printed[@]}" = 3 ] || fail "--print-id printed ${#printed[@]} lines, expected 3"
[ "$(printf '%s\n' "${printed[@]}" | sort -u | wc -l)" = 3 ] || fail "ids not distinct: ${printed[*]}"
[ "$(ids_of a)" = "${printed[0]}" ] || fail "a holds $(ids_of a), printed ${printed[0]}"
[ "$(ids_of b)" = "${printed[1]}" ] || fail "b holds $(ids_of b), printed ${printed[1]}"
[ "$(ids_of 'out;L')" = "${printed[2]}" ] || fail "out;L holds $(ids_of 'out;L')"
[ "$(mq-peek 'out;L' --json | jq -r .destination_queue)" = c ] ||
  fail "the remote copy is not for queue c"
for q in a b 'out;L'; do
  [ "$(mq-peek "$q" --json | jq -r '.label + " " + .body')" = "hello body1" ] ||
    fail "the copy in $q: $(mq-peek "$q" --json)"
done

# 2. -l: each line a message in every queue; ids message by message, copies in list order.
printf 'x\ny\n' | mq-send -l 'b,a' --print-id >"$T/ids" || fail "mq-send -l b,a failed"
mapfile -t printed <"$T/ids"
[ "${#printed[@]}" = 4 ] || fail "-l printed ${#printed[@]} ids, expected 4"
a_ids=$(ids_of a | tail -n 2 | tr '\n' ' ')
b_ids=$(ids_of b | tail -n 2 | tr '\n' ' ')
[ "$b_ids" = "${printed[0]} ${printed[2]} " ] || fail "b's ids $b_ids, printed ${printed[*]}"
[ "$a_ids" = "${printed[1]} ${printed[3]} " ] || fail "a's ids $a_ids, printed ${printed[*]}"

# 3. The MSMQ spelling, with and without FormatName:.
expect_rc 0 mq-send 'FormatName:DIRECT=OS:.\private$\a,DIRECT=OS:.\private$\b' fn1
expect_rc 0 mq-send 'DIRECT=OS:.\private$\a,b' fn2
[ "$(count a)" = 5 ] && [ "$(count b)" = 5 ] || fail "after the format names: a $(count a), b $(count b)"

# 4. A full quota in one queue: nothing stored anywhere, the exit status of b's refusal.
rec=$(mq-admin stat b --json | jq .bytes)
expect_rc 0 mq-admin set b --quota "$rec"
expect_rc 6 mq-send b one-more
expect_rc 6 mq-send 'a,b,L:c' one-more
expect_err_match '^mq-send: b: queue quota of [0-9]+ bytes would be exceeded .*MQ_ERROR_INSUFFICIENT_RESOURCES'
[ "$(count a)" = 5 ] || fail "a full b let a take a copy: a holds $(count a)"
[ "$(count 'out;L')" = 1 ] || fail "a full b let out;L take a copy"
printf '1\n2\n' | mq-send -l 'a,b' 2>/dev/null && fail "-l into a full b succeeded"
[ "$(count a)" = 5 ] || fail "-l into a full b stored in a"
expect_rc 0 mq-admin set b --quota 0

# 5. A disabled queue, a missing one: nothing stored, their exit statuses; --create makes it.
expect_rc 0 mq-admin set b --status off
expect_rc 5 mq-send 'a,b' z
expect_err_match '^mq-send: b: queue is disabled'
expect_rc 0 mq-admin set b --status on
expect_rc 3 mq-send 'a,nosuch' z
expect_err_match '^mq-send: nosuch: no such queue'
expect_rc 3 mq-send 'a,M:c' z
expect_err_match '^mq-send: M: no such link'
[ "$(count a)" = 5 ] || fail "a refused list stored in a: $(count a)"
expect_rc 0 mq-send --create 'a,made' z
[ "$(count made)" = 1 ] && [ "$(count a)" = 6 ] || fail "--create: made $(count made), a $(count a)"

# 6. Lists that make no sense: a queue twice, an empty element, a dedup key or a conversation
#    (each belongs to one queue), a subqueue.
expect_rc 2 mq-send 'a,b,a' z
expect_err_match '^mq-send: a,b,a: invalid queue name: a is named twice'
expect_rc 2 mq-send 'a,,b' z
expect_err_match 'an empty element'
expect_rc 2 mq-send 'a,b,' z
expect_rc 2 mq-send 'a,b' --dedup k z
expect_err_match 'a dedup key belongs to one queue'
expect_rc 2 mq-send 'a,b' --conversation new z
expect_err_match 'a conversation belongs to one queue'
expect_rc 2 mq-send 'a,b;poison' z
[ "$(count a)" = 6 ] || fail "a refused list stored in a: $(count a)"

# 7. --tx into transactional queues: each copy is its queue's own transaction.
expect_rc 0 mq-admin create ta --transactional
expect_rc 0 mq-admin create tb --transactional
expect_rc 5 mq-send 'a,ta' z
printf '1\n2\n' | mq-send -l --tx 'ta,tb' || fail "--tx into ta,tb failed"
for q in ta tb; do
  [ "$(mq-peek "$q" --all --json | jq -s -c 'map([.eod_first, .eod_last])')" = \
    '[[true,false],[false,true]]' ] || fail "$q's transaction: $(mq-peek "$q" --all --json)"
done
[ "$(mq-peek ta --all --json | jq -r .xact_id | sort -u | wc -l)" = 1 ] || fail "ta: two xacts"
[ "$(mq-peek ta --json | jq -r .xact_id)" != "$(mq-peek tb --json | jq -r .xact_id)" ] ||
  fail "ta and tb share a transaction id"

# 8. Receivers waiting on each queue wake.
expect_rc 0 mq-admin purge a
expect_rc 0 mq-admin purge b
mq-receive -w 10s a >"$T/ra" &
pa=$!
mq-receive -w 10s b >"$T/rb" &
pb=$!
sleep 0.3
expect_rc 0 mq-send 'a,b' wake
wait "$pa" || fail "the receiver on a did not get its copy"
wait "$pb" || fail "the receiver on b did not get its copy"
[ "$(cat "$T/ra")$(cat "$T/rb")" = wakewake ] || fail "receivers got '$(cat "$T/ra")' '$(cat "$T/rb")'"

# 9. SIGKILL at any moment: each batch is in every queue or in none, and the store checks.
expect_rc 0 mq-admin purge a
expect_rc 0 mq-admin purge b
for i in 1 2 3 4 5; do
  seq 200000 | mq-send -l 'a,b' 2>/dev/null &
  p=$!
  sleep "0.0$((RANDOM % 9 + 1))"
  kill -KILL "$p" 2>/dev/null
  wait "$p" 2>/dev/null
  [ "$(count a)" = "$(count b)" ] || fail "killed send $i: a holds $(count a), b $(count b)"
done
echo "after five killed sends: a and b hold $(count a) messages each"
expect_rc 0 mq-admin check
expect_out ''

finish
