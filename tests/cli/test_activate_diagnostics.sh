#!/bin/bash
# mq-watch --exec (issue 15, section 2): what its receivers report on stderr (a command that
# failed, a rollback, a note) is signed by mq-watch, the tool the user ran, not "mq-receive:";
# and the option that does it is no part of mq-receive's --help.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q --max-retries 1
expect_rc 0 mq-send q doomed
start mq-watch q --exec sh -c 'cat >/dev/null; exit 3'
W=$PID
# The message leaves for q;poison after its one failed run.
gone() { [ "$(mq-admin stat q --json | jq .messages)" = 0 ]; }
until_true 20 gone || fail "the failing message never left q"
until_true 10 grep -q . "$T/bg.$W.err" || fail "nothing on mq-watch's stderr"
kill -TERM "$(tool_pid "$W")"
expect_bg 0 "$W"
grep -q 'mq-receive' "$T/err" && fail "a receiver of mq-watch signed as mq-receive: $(cat "$T/err")"
grep -Eq '^mq-watch: q: sh exited with status 3; message 1 rolled back' "$T/err" || fail "mq-watch's stderr: $(cat "$T/err")"
grep -Ev '^mq-watch: ' "$T/err" | grep -q . && fail "a line not signed mq-watch: $(cat "$T/err")"

# mq-receive itself still signs as mq-receive, and does not show the option in its help.
expect_rc 0 mq-send q again
expect_rc 8 mq-receive q --exec sh -c 'exit 3'
grep -Eq '^mq-receive: q: sh exited with status 3; message 2 rolled back' "$T/err" || fail "mq-receive's stderr: $(cat "$T/err")"
expect_rc 0 mq-receive --help
grep -q 'diagnostics' "$T/out" && fail "mq-receive --help shows mq-watch's option"
# It takes no other name.
expect_rc 2 mq-receive --diagnostics-as mq-send q
finish
