#!/bin/bash
# mq-receive --exec and the processes of its command (issue 13, defect 2): the transaction
# lasts as long as any process of the command lives. A grandchild that outlives a killed
# mq-receive keeps the message Locked (no second worker takes it) until it exits; what is
# left of the command's process group when the command exits is killed before the commit;
# SIGHUP kills the command's group at once and rolls back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

# pid_of_file FILE: the pid written in FILE, once it is there.
has() { [ -s "$1" ]; }

# --- kill -9 of mq-receive while a pipeline of its command still runs -----------------------
expect_rc 0 mq-admin create q
expect_rc 0 mq-send q m1
# The pipeline's sleep is 3 s so that the checks of the Locked message (two tools after the
# kill) run while it still does, even under the sanitizers on a loaded machine; checked.
start mq-receive q --exec sh -c 'echo $$ >"$0/sh.pid"; sleep 3 | cat; echo done >>"$0/log"' "$T"
recv=$(tool_pid "$PID")
until_true 10 has "$T/sh.pid" || fail "the command did not start"
t_started=$(date +%s%3N)
sleep 0.2
kill -9 "$recv"
t_kill=$(date +%s%3N)
sleep 0.3
# The sleep of the pipeline still runs and holds the lease: nobody else may take the message.
expect_rc 1 mq-receive q
expect_rc 0 mq-admin stat q --json
[ "$(jq .locked "$T/out")" = 1 ] || fail "the message is not Locked while the command's pipeline runs: $(cat "$T/out")"
t_checked=$(date +%s%3N)
((t_checked - t_started < 2900)) ||
  fail "the checks while the pipeline runs ended $((t_checked - t_started)) ms after it started"
# Once the pipeline is gone, the message comes back (a rollback: abort count 1).
expect_rc 0 mq-receive q -w 10s --format json
t_back=$(date +%s%3N)
[ "$(jq -r .body "$T/out")" = m1 ] || fail "got $(cat "$T/out")"
[ "$(jq -c '[.delivery_count, .abort_count]' "$T/out")" = '[1,1]' ] || fail "counts: $(cat "$T/out")"
((t_back - t_kill >= 2000)) ||
  fail "the message came back $((t_back - t_kill)) ms after the kill, while the sleep 3 still ran"
[ ! -e "$T/log" ] || fail "the command's shell outlived mq-receive: $(cat "$T/log")"

# --- a command that leaves a background process: it is killed before the commit ----------------
expect_rc 0 mq-send q m2
expect_rc 0 timeout 20 mq-receive q --exec sh -c 'sleep 30 & echo $! >"$0/bg.pid"' "$T"
p=$(cat "$T/bg.pid")
sleep 0.1
if kill -0 "$p" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then
  fail "the command's background process $p outlived the transaction"
fi
expect_rc 1 mq-peek q

# --- SIGHUP: the command's whole group is killed at once and the message rolled back ----------
expect_rc 0 mq-send q m3
rm -f "$T/sh.pid"
start mq-receive q --exec sh -c 'echo $$ >"$0/sh.pid"; sleep 30 | cat; echo done >>"$0/log"' "$T"
recv=$(tool_pid "$PID")
until_true 10 has "$T/sh.pid" || fail "the command did not start (SIGHUP case)"
sleep 0.2
t0=$(date +%s%3N)
kill -HUP "$recv"
until_true 5 eval '! kill -0 '"$recv"' 2>/dev/null' || fail "mq-receive did not end on SIGHUP"
wait "$PID" 2>/dev/null
t1=$(date +%s%3N)
((t1 - t0 < 2000)) || fail "mq-receive took $((t1 - t0)) ms to end on SIGHUP"
[ -z "$(pgrep -f 'sleep 30$' | xargs -r ps -o pid=,pgid= -p | awk -v s="$(cat "$T/sh.pid")" '$2 == s')" ] ||
  fail "the command's pipeline outlived SIGHUP"
expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-receive q --format json
[ "$(jq -c '[.body, .abort_count]' "$T/out")" = '["m3",1]' ] || fail "after SIGHUP: $(cat "$T/out")"
[ ! -e "$T/log" ] || fail "the command went on after SIGHUP"
finish
