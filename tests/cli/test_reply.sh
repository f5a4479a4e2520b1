#!/bin/bash
# Request/response (issue 6.5): --response-queue records where replies go; --reply-to MSGID
# and --reply-to-env send there with correlation id = the request's id; mq-receive
# --correlation ID --wait picks the reply out.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create requests
expect_rc 0 mq-admin create replies

# The two-line client of mq(7), against a server loop answering with --reply-to-env.
mq-receive requests --wait 10s --exec sh -c 'tr a-z A-Z | mq-send --reply-to-env' &
server=$!
id=$(mq-send requests --response-queue replies --print-id "hello")
expect_rc 0 mq-receive replies --correlation "$id" --wait 10s
expect_out "HELLO"
wait "$server" || fail "the server's receive failed"

# Replies are matched to their request, whatever the order.
id1=$(mq-send requests --response-queue replies --print-id one)
id2=$(mq-send requests --response-queue replies --print-id two)
mq-receive requests --exec sh -c 'mq-send --reply-to "$MQ_ID" "re: $(cat)"' || fail "reply one"
mq-receive requests --exec sh -c 'mq-send --reply-to-env "re: $(cat)"' || fail "reply two"
expect_rc 0 mq-receive replies --correlation "$id2"
expect_out "re: two"
expect_rc 0 mq-receive replies --correlation "$id1" --json
[ "$(jq -r .body "$T/out")" = "re: one" ] || fail "reply one: $(cat "$T/out")"
[ "$(jq -r .queue "$T/out")" = replies ] || fail "reply went to $(jq -r .queue "$T/out")"

# Errors: a request with no response queue; an unknown id; MQ_ID unset; a queue given too.
nrq=$(mq-send requests --print-id noreply)
expect_rc 2 mq-send --reply-to "$nrq" x
expect_err_match "the request names no response queue"
expect_rc 0 mq-receive requests
expect_rc 1 mq-send --reply-to "$nrq" x
expect_err_match "no longer in the store"
expect_rc 2 env -u MQ_ID mq-send --reply-to-env x
expect_err_match "MQ_ID is not set"
expect_rc 2 mq-send --reply-to "$id1" replies x
expect_err_match "give only a body"
expect_rc 2 mq-send --reply-to "$id1" --reply-to-env x
expect_rc 2 mq-send
expect_err_match "QUEUE is required"
# A missing response queue fails like any send to a missing queue.
gone=$(mq-send requests --response-queue nosuch --print-id q)
expect_rc 8 mq-receive requests --exec sh -c 'mq-send --reply-to-env answer'
grep -q "^mq-send: nosuch: no such queue" "$T/err" || fail "reply to a missing queue: $(cat "$T/err")"
[ "$(mq-admin stat requests --json | jq .messages)" = 1 ] || fail "the request was lost"
: "$gone"
finish
