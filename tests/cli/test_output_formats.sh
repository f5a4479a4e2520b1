#!/bin/bash
# How mq-peek and mq-receive print: raw bodies (with -l / -0 separators), --json (one object
# per line, every property, base64 for bodies that are not UTF-8) and --template.
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q -L first one
expect_rc 0 mq-send q -L second $'two\nlines'
expect_rc 0 mq-send q -L third three

# Raw: one body as it is; several need -l (each ends with a newline) or -0 (with a NUL), as
# back to back they would run together (test_peek_separator).
expect_rc 0 mq-peek q
expect_out one
expect_rc 2 mq-peek q --all
expect_rc 0 mq-peek q --all -l
expect_out $'one\ntwo\nlines\nthree\n'
mq-peek q --all -0 >"$T/z"
printf 'one\0two\nlines\0three\0' | cmp -s - "$T/z" || fail "-0 output: $(od -c "$T/z" | head -3)"
expect_rc 2 mq-peek q -l -0
expect_rc 2 mq-peek q --json -l
expect_err_match 'E_INVALIDARG'

# JSON: one complete object per line per message.
expect_rc 0 mq-peek q --all --json
[ "$(wc -l <"$T/out")" = 3 ] || fail "--json printed $(wc -l <"$T/out") lines for 3 messages"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  jq -e 'type == "object"' <<<"$line" >/dev/null || fail "--json line $n is not one JSON object: $line"
done <"$T/out"
cp "$T/out" "$T/all.json"
jq -s -e 'map(.body) == ["one", "two\nlines", "three"]' "$T/all.json" >/dev/null ||
  fail "--json bodies wrong"
jq -s -e 'map(.label) == ["first", "second", "third"] and map(.lookup_id) == [1, 2, 3]' \
  "$T/all.json" >/dev/null || fail "--json labels or lookup ids wrong"
# Every property of the message model is there.
for key in id lookup_id queue class priority label body body_type body_type_name body_encoding \
           correlation_id app_specific journal deadletter ack admin_queue response_queue \
           destination_queue sent_time arrived_time ttrq ttbr source_qm_guid hash_algorithm \
           provider_type provider_name connector_id eod_first eod_last tx_sequence_id \
           tx_sequence_number delivery conversation_handle conversation_group_id \
           message_sequence_number service_name service_contract_name message_type_name \
           validation status queuing_order message_enqueue_time delivery_count; do
  jq -e --arg k "$key" 'has($k)' <<<"$(head -n 1 "$T/all.json")" >/dev/null ||
    fail "--json lacks the property '$key'"
done
jq -e 'has("extension") or has("extension_base64")' <<<"$(head -n 1 "$T/all.json")" >/dev/null ||
  fail "--json lacks the extension property"
jq -e '.queue == "q" and (.id | test("^\\{[0-9a-f-]{36}\\}\\\\[0-9]+$"))' \
  <<<"$(head -n 1 "$T/all.json")" >/dev/null || fail "--json id or queue wrong"
# --format json is the same as --json; other formats are refused.
expect_rc 0 mq-peek q --all --format json
cmp -s "$T/out" "$T/all.json" || fail "--format json differs from --json"
expect_rc 2 mq-peek q --format nonsense
expect_err_match 'E_INVALIDARG'
expect_rc 2 mq-peek q --json --template '{body}'
# Receive prints the same JSON as peek did.
expect_rc 0 mq-receive q --json
head -n 1 "$T/all.json" | cmp -s - "$T/out" || fail "receive --json differs from peek --json"

# Bodies that are not UTF-8 travel as base64 in JSON, and decode to the same bytes.
printf '\xff\xfe\x00binary\x80' >"$T/bin"
expect_rc 0 mq-send -f "$T/bin" q
expect_rc 0 mq-peek q --last --json
jq -e '.body_encoding == "base64" and .body_size == 10' "$T/out" >/dev/null ||
  fail "non-UTF-8 body not marked base64: $(cat "$T/out")"
jq -r .body "$T/out" | base64 -d >"$T/decoded" || fail "the base64 body does not decode"
cmp -s "$T/bin" "$T/decoded" || fail "the base64 body decodes to other bytes"
# UTF-8 text stays text, also outside ASCII.
expect_rc 0 mq-send q 'grüße ✓'
expect_rc 0 mq-peek q --last --json
jq -e '.body == "grüße ✓" and .body_encoding == "utf-8"' "$T/out" >/dev/null ||
  fail "UTF-8 body not kept as text: $(cat "$T/out")"
expect_rc 0 mq-receive q --last
expect_rc 0 mq-receive q --last
expect_rc 0 mq-peek q --all -l
expect_out $'two\nlines\nthree\n'

# Templates: fields, escapes, literal braces; the raw body in {body}.
expect_rc 0 mq-peek q --all --template '{lookup_id}:{label}:{body}\n'
expect_out $'2:second:two\nlines\n3:third:three\n'
expect_rc 0 mq-peek q --template '{{{priority}}}\t{queue}\\'
expect_out $'{3}\tq\\'
expect_rc 0 mq-peek q --template 'no fields'
expect_out 'no fields'
expect_rc 0 mq-peek q --template '{correlation_id}|{admin_queue}|{journal}'
expect_out '||false'  # a property without a value prints as nothing
for bad in '{nosuchfield}' '{body' '{Body}' '{}'; do
  expect_rc 2 mq-peek q --template "$bad"
  expect_err_match 'E_INVALIDARG'
  expect_out ''
  expect_rc 2 mq-receive q --template "$bad"
done
expect_rc 0 mq-admin stat q --json
jq -e '.messages == 2' "$T/out" >/dev/null || fail "a bad template removed messages"

finish
