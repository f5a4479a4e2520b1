#!/bin/bash
# mq-send, mq-peek, mq-receive and mq-watch are linked statically (issue 25: the dynamic
# loader was a quarter of a single send). What a static program must not do is done otherwise:
#  1. the four tools have no program interpreter (a build without sanitizers);
#  2. their XML checks run in one `mq-admin message-type check --validation well-formed-xml
#     --null` beside them: a well-formed body is sent, a bad one refused with libxml2's reason
#     and nothing sent; a bulk send checks its bodies in batches; without mq-admin beside
#     them, an XML check fails with a one-line error that names it, and nothing is sent, while
#     sends that need no XML check still work;
#  3. mq-admin message-type check itself: one line per body, exit 0 or 7, --validation with no
#     store, NAME from the store, bad usage;
#  4. with HOME unset, the default store is under the home directory of /etc/passwd.
. "$(dirname "$0")/lib.sh"

# 1. Static.
if grep -q '^MQ_SANITIZE:BOOL=ON' "$MQ_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "sanitized build: the tools are dynamic (ASan), not checked"
else
  for tool in mq-send mq-peek mq-receive mq-watch; do
    readelf -lW "$MQ_BIN/$tool" | grep -q 'Requesting program interpreter' &&
      fail "$tool is dynamically linked: $(readelf -lW "$MQ_BIN/$tool" | grep interpreter)"
  done
  readelf -lW "$MQ_BIN/mq-admin" | grep -q 'Requesting program interpreter' ||
    fail "mq-admin is not dynamically linked (it loads libxml2, libcurl)"
fi

# 2. XML checks through mq-admin.
expect_rc 0 mq-admin create q
expect_rc 0 mq-admin message-type create x --validation well-formed-xml
expect_rc 0 mq-send --message-type x q '<a b="1">text</a>'
expect_rc 7 mq-send --message-type x q '<a></b>'
expect_err_match "^mq-send: q: message type 'x' requires well-formed XML: Opening and ending tag mismatch: a line 1 and b \(line 1\); nothing was sent \(MQ_VALIDATION_FAILED"
[ "$(mq-admin stat q --json | jq .messages)" = 1 ] || fail "a refused body was stored"
# 2,500 bodies in one send (one transaction; three batches of the helper), the bad one the 2,001st: nothing of
# that transaction is sent, and the error is that body's.
for i in $(seq 2500); do
  if [ "$i" = 2001 ]; then echo '<r>&bad;</r>'; else echo "<r n=\"$i\"/>"; fi
done >"$T/lines"
expect_rc 7 mq-send -l --message-type x q <"$T/lines"
expect_err_match "Entity 'bad' not defined \(line 1\); nothing was sent"
[ "$(mq-admin stat q --json | jq .messages)" = 1 ] || fail "part of a refused batch was stored"
sed -i '2001d' "$T/lines"
expect_rc 0 mq-send -l --message-type x q <"$T/lines"
[ "$(mq-admin stat q --json | jq .messages)" = 2500 ] || fail "2,499 good bodies: $(mq-admin stat q --json | jq .messages) messages"
# A NUL byte is refused before any helper sees it.
printf '<a>\0</a>' >"$T/nul"
expect_rc 7 mq-send --message-type x q -f "$T/nul"
expect_err_match "Char 0x0 out of allowed range \(line 1\); nothing was sent"
# Only mq-send, without mq-admin beside it.
mkdir "$T/alone"
cp "$MQ_BIN/mq-send" "$T/alone/"
expect_rc 0 "$T/alone/mq-send" q plain
expect_rc 0 "$T/alone/mq-send" --message-type DEFAULT q plain
run "$T/alone/mq-send" --message-type x q '<a/>'
[ "$RC" != 0 ] || fail "an XML check without mq-admin succeeded"
expect_err_match "^mq-send: q: cannot check well-formed XML: cannot run '$T/alone/mq-admin': No such file or directory; nothing was sent"
[ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line: $(cat "$T/err")"
[ "$(mq-admin stat q --json | jq .messages)" = 2502 ] || fail "expected 2,502 messages"

# 3. mq-admin message-type check.
printf '<a/>\0<b>\0\0<c/>' >"$T/bodies"
expect_rc 7 mq-admin -s "$T/no-store" message-type check --validation well-formed-xml -0 <"$T/bodies"
expect_out "ok
invalid: requires well-formed XML: Premature end of data in tag b line 1 (line 1)
invalid: requires well-formed XML: the body is empty
ok
"
[ -e "$T/no-store" ] && fail "message-type check --validation made a store"
expect_err_match '^mq-admin: a body does not pass the validation of well-formed-xml'
printf '<a/>' | expect_rc 0 mq-admin message-type check x
expect_out "ok
"
printf 'not empty' | expect_rc 7 mq-admin message-type check \
  http://schemas.microsoft.com/SQL/ServiceBroker/EndDialog
expect_out "invalid: requires an empty body (9 bytes given)
"
printf 'x' | expect_rc 0 mq-admin message-type check --validation none
expect_rc 2 mq-admin message-type check
expect_err_match 'needs NAME or --validation'
expect_rc 2 mq-admin message-type check x --validation none
printf '' | expect_rc 2 mq-admin message-type check nosuch
expect_err_match "no message type 'nosuch'"

# 4. HOME unset: the home directory from /etc/passwd (nobody's is /nonexistent).
if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null &&
  [ "$(getent passwd nobody | cut -d: -f6)" = /nonexistent ] && [ ! -e /nonexistent ]; then
  for tool in mq-send mq-peek; do
    run setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$PATH" "$tool" q
    grep -q '/nonexistent' "$T/err" ||
      fail "$tool with HOME unset did not look under nobody's home: $(cat "$T/err")"
  done
else
  echo "not root, or no user nobody with home /nonexistent: HOME unset not checked"
fi
finish
