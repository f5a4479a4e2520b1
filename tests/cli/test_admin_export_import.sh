#!/bin/bash
# mq-admin export / import: JSON lines that carry every property; an import reproduces the
# queue (bodies, properties, order) and is all or nothing.
. "$(dirname "$0")/lib.sh"

count() { mq-admin "$@" --json | jq -r .messages; }
# The comparable part of an export: everything but where and when the copy was stored.
strip() { jq -c 'del(.id, .lookup_id, .queue, .arrived_time, .message_enqueue_time, .queuing_order)' "$@"; }

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create acks
expect_rc 0 mq-send q -p 5 -L 'first label' -c 1111111111111111111111111111111111111111 --app 7 \
  --body-type text --journal --deadletter --admin-queue acks --ack full-receive \
  --response-queue acks --ttbr 1d --express 'hello'
expect_rc 0 mq-send q -p 1 "$(printf '\xff\xfe not utf-8')"
expect_rc 0 mq-send q -p 5 $'multi\nline "quoted" \\ body'
expect_rc 0 mq-send q ''
expect_rc 0 mq-send -l q < <(seq 1 200)

expect_rc 0 mq-admin export q
cp "$T/out" "$T/q.jsonl"
[ "$(wc -l <"$T/q.jsonl")" = 204 ] || fail "export printed $(wc -l <"$T/q.jsonl") lines for 204 messages"
jq -e -s 'length == 204 and all(has("body") and has("priority") and has("id"))' "$T/q.jsonl" >/dev/null ||
  fail "export lines are not complete message objects"
# The export is in arrival (lookup id) order, so that an import rebuilds the same delivery
# order, and changes nothing.
jq -r -s 'map(.lookup_id) | @text' "$T/q.jsonl" >"$T/order"
mq-peek q --all --template '{lookup_id}\n' | sort -n | jq -s -c . | cmp -s - <(jq -c . "$T/order") ||
  fail "export order is not the arrival order"
[ "$(count stat q)" = 204 ] || fail "export changed the queue"
expect_rc 0 mq-admin export q --format json
cmp -s "$T/out" "$T/q.jsonl" || fail "export --format json differs from export"
expect_rc 2 mq-admin export q --format nonsense
expect_rc 3 mq-admin export nosuch
expect_rc 0 mq-admin create empty
expect_rc 0 mq-admin export empty
expect_out ''

# Into another store: ids kept, everything else equal, same order.
expect_rc 0 mq-admin -s "$T/other" init
expect_rc 3 mq-admin -s "$T/other" import copy <"$T/q.jsonl"
expect_rc 0 mq-admin -s "$T/other" import --create copy <"$T/q.jsonl"
expect_out ''
expect_rc 0 mq-admin -s "$T/other" export copy
cp "$T/out" "$T/copy.jsonl"
strip "$T/q.jsonl" >"$T/a"
strip "$T/copy.jsonl" >"$T/b"
cmp -s "$T/a" "$T/b" || fail "the imported copy differs: $(diff "$T/a" "$T/b" | head -4)"
jq -r .id "$T/q.jsonl" | cmp -s - <(jq -r .id "$T/copy.jsonl") || fail "import without --new-ids changed ids"
mq-receive -s "$T/other" copy --all -0 >"$T/bodies.copy"
mq-peek q --all -0 >"$T/bodies.orig"
cmp -s "$T/bodies.orig" "$T/bodies.copy" || fail "the imported bodies differ byte for byte"
expect_rc 0 mq-admin -s "$T/other" import copy <"$T/q.jsonl"

# The same ids again: refused (2), nothing imported.
before=$(count -s "$T/other" stat copy)
expect_rc 2 mq-admin -s "$T/other" import copy <"$T/q.jsonl"
expect_err_match 'already'
[ "$(count -s "$T/other" stat copy)" = "$before" ] || fail "a refused import changed the count"
# ... also in the original store, into another queue.
expect_rc 0 mq-admin create q2
expect_rc 2 mq-admin import q2 <"$T/q.jsonl"
[ "$(count stat q2)" = 0 ] || fail "a refused import into q2 stored messages"
# With --new-ids: accepted, new ids, same content.
expect_rc 0 mq-admin import --new-ids q2 <"$T/q.jsonl"
[ "$(count stat q2)" = 204 ] || fail "import --new-ids stored $(count stat q2) messages"
expect_rc 0 mq-admin export q2
strip "$T/out" | cmp -s - "$T/a" || fail "import --new-ids changed the messages"
jq -r .id "$T/out" | sort >"$T/ids.new"
jq -r .id "$T/q.jsonl" | sort | comm -12 - "$T/ids.new" | grep -q . && fail "--new-ids kept old ids"
expect_rc 0 mq-admin -s "$T/other" import --new-ids copy <"$T/q.jsonl"
[ "$(count -s "$T/other" stat copy)" = $((before + 204)) ] || fail "import --new-ids into copy miscounted"

# A bad line anywhere: 2, and nothing of the input is imported.
good=$(head -n 1 "$T/q.jsonl" | jq -c 'del(.id)')
for bad in 'not json' '{"priority": 9, "body": "x"}' '{"body": 5}' '[1,2]' \
           '{"body_encoding": "base64", "body": "!!!"}' '{"correlation_id": "xyz"}'; do
  printf '%s\n%s\n%s\n' "$good" "$bad" "$good" >"$T/bad.jsonl"
  expect_rc 2 mq-admin import q2 <"$T/bad.jsonl"
  expect_err_match 'line 2'
  [ "$(count stat q2)" = 204 ] || fail "import with bad line '$bad' changed the count"
done
# Blank lines are skipped; a minimal object is a message.
printf '\n{"body":"minimal"}\n\n' | mq-admin import q2 || fail "import of a minimal object failed"
expect_rc 0 mq-peek q2 --all --json
jq -s -e 'map(select(.body == "minimal")) | length == 1 and .[0].priority == 3 and .[0].queue == "q2"' \
  "$T/out" >/dev/null ||
  fail "minimal import: $(grep minimal "$T/out")"
expect_rc 0 mq-admin check
expect_rc 0 mq-admin -s "$T/other" check

# Issue 12: a record mq-send would refuse is refused, naming its line, and nothing is imported.
expect_rc 0 mq-admin create strict
good='{"body":"ok","priority":3}'
for bad in '{"body":"x","response_queue":"../../x"}' '{"body":"x","admin_queue":"a/b"}' \
           '{"body":"x","priority":9}' '{"body":"x","ack_value":14}'; do
  printf '%s\n%s\n' "$good" "$bad" >"$T/bad.jsonl"
  run mq-admin import strict <"$T/bad.jsonl"
  [ "$RC" = 2 ] || fail "import of $bad exited $RC: $(cat "$T/err")"
  grep -q "line 2: " "$T/err" || fail "import of $bad does not name line 2: $(cat "$T/err")"
  [ "$(mq-admin stat strict --json | jq -r .messages)" = 0 ] || fail "import of $bad imported something"
done

finish
