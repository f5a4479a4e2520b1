#!/bin/bash
# Smaller contract points of issue 15, section 1: mq-admin import takes --format json as export
# does; body_type shows json and xml by name in --json (VARTYPE numbers stay numbers), and import
# takes either; a missing local --response-queue gets a note like a missing --admin-queue;
# end-conversation --description refuses control characters XML cannot carry (exit 2).
. "$(dirname "$0")/lib.sh"

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q --body-type json '{"a":1}'
expect_rc 0 mq-send q --body-type xml '<a/>'
expect_rc 0 mq-send q --body-type text 'plain'
expect_rc 0 mq-peek q --all --json
[ "$(jq -c .body_type "$T/out" | tr '\n' ' ')" = '"json" "xml" 8 ' ] ||
  fail "body_type: $(jq -c .body_type "$T/out" | tr '\n' ' ')"
expect_rc 0 mq-admin export q --format json
cp "$T/out" "$T/export"
expect_rc 0 mq-admin create r
run mq-admin import r --format json --new-ids <"$T/export"
[ "$RC" = 0 ] || fail "import --format json exited $RC: $(cat "$T/err")"
expect_rc 0 mq-peek r --all --json
[ "$(jq -r .body_type_name "$T/out" | tr '\n' ' ')" = 'json xml text ' ] ||
  fail "imported body types: $(cat "$T/out")"
expect_rc 2 mq-admin import r --format srmpx </dev/null

# A note for a missing local response queue, none for one that exists.
expect_rc 0 mq-send q --response-queue nowhere x
expect_err_match '^mq-send: q: response queue nowhere does not exist: a reply sent there will fail until it is made$'
expect_rc 0 mq-send q --response-queue r x
expect_out ''
[ -s "$T/err" ] && fail "a note for an existing response queue: $(cat "$T/err")"

# end-conversation --description: control characters refused before anything changes.
c=$(mq-send q --conversation new hello)
expect_rc 2 mq-admin end-conversation "$c" --error 5 --description $'a\x01b'
expect_err_match 'control character 0x01'
expect_rc 0 mq-admin end-conversation "$c" --error 5 --description $'line one\nline <two> & "three"'
expect_rc 0 mq-peek q --last --json
body=$(jq -r .body "$T/out")
case "$body" in
  *'<Description>line one'*'line &lt;two&gt; &amp; &quot;three&quot;</Description>'*) ;;
  *) fail "Error body: $body" ;;
esac
finish
