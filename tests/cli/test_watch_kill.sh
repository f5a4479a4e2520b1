#!/bin/bash
# SIGKILL of mq-watch --exec --max-readers 3 (issue 11, item 4): its receivers and their
# commands stop with it (PR_SET_PDEATHSIG: SIGHUP to each receiver, which kills its command's
# process group and rolls back): no message is processed more than 2 s after the kill, nothing
# stays Locked, and every message is either committed exactly once or back in the queue.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

busy() { [ "$(find "$T/busy" -type f | wc -l)" -ge 3 ]; }

mkdir "$T/busy"
# CMD: marks itself busy, appends a timestamp every 100 ms for 5 s (in a subshell of its own,
# as real work would be a process tree), then records its message as done.
CMD='IFS= read -r body
: >"$0/busy/$body"
(for i in $(seq 50); do date +%s%3N >>"$0/ticks"; sleep 0.1; done)
echo "$body" >>"$0/done"'
expect_rc 0 mq-admin create q --max-retries 0
seq -f 'm%g' 10 | mq-send -l q
BG_TIMEOUT=120
start mq-watch q --max-readers 3 --exec sh -c "$CMD" "$T"
watch=$(tool_pid "$PID")
until_true 20 busy || fail "3 commands did not start"
sleep 0.3
kill -9 "$watch"
t_kill=$(date +%s%3N)
sleep 3
late=$(awk -v k="$t_kill" '$1 > k + 2000' "$T/ticks" | wc -l)
[ "$late" = 0 ] || fail "$late ticks written more than 2 s after mq-watch was killed"
[ -z "$(pgrep -f "mq-receive -s $STORE")" ] || fail "receivers outlived mq-watch: $(pgrep -af "mq-receive -s $STORE")"
expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-admin stat q --json
[ "$(jq .locked "$T/out")" = 0 ] || fail "Locked after the kill: $(cat "$T/out")"
committed=$(sort "$T/done" 2>/dev/null | uniq | wc -l)
[ "$(sort "$T/done" 2>/dev/null | uniq -d)" = "" ] || fail "committed twice: $(sort "$T/done" | uniq -d)"
left=$(jq .messages "$T/out")
[ "$((committed + left))" = 10 ] || fail "$committed committed + $left left != 10 sent"
finish
