#!/bin/bash
# Issue 11: pipes never stall the store or lose a message. No store transaction is open while
# a tool writes its output; a message leaves the queue only once its reader has taken it; the
# standard descriptors are never store files; a paused peek pins nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

count() { mq-admin stat "$1" --json | jq -r .messages; }

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin create other

# 1. A stalled reader stops no writer: a send to another queue finishes at once.
seq -f 'm%07g' 20000 | mq-send -l q
( mq-receive q --all -l 2>/dev/null | sleep 20 ) &
stalled=$!
BG+=("$stalled")
sleep 1
t0=$(date +%s%N)
timeout 10 mq-send other hello
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$rc" = 0 ] || fail "a send to another queue while a reader stalls exited $rc"
[ "$ms" -lt 3000 ] || fail "a send to another queue while a reader stalls took $ms ms"
t0=$(date +%s%N)
timeout 10 mq-send q more
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 3000 ] || fail "a send to the same queue while a reader stalls took $ms ms"
# What the stalled reader holds is Locked, not gone; the rest can be received by others.
timeout 10 mq-receive other >/dev/null || fail "a receive from another queue while a reader stalls failed"
killtree "$stalled"
sleep 0.2
[ "$(count q)" = 20001 ] || fail "after the stalled reader was killed: $(count q) of 20001 messages left"
expect_rc 0 mq-admin check
expect_rc 0 mq-admin purge q

# 2. A reader that stops early: at most what it read leaves the queue. 50 messages of 1 KiB fit
# in a pipe (so the writer sees no EPIPE) but not in what head reads before it exits; 1,000
# are more than the pipe holds.
pad=$(printf 'x%.0s' $(seq 1020))
for i in $(seq 1000 1049); do echo "$i $pad"; done >"$T/lines50"
expect_rc 0 mq-send -l q <"$T/lines50"
got=$(mq-receive q --all -l 2>/dev/null | head -n1)
[ "$got" = "1000 $pad" ] || fail "| head -n1 printed '${got:0:20}...'"
left=$(count q)
[ "$left" -ge 30 ] || fail "| head -n1 of 50 messages of 1 KiB left $left in the queue"
mq-receive q --all -l 2>/dev/null | while read -r l; do break; done
left=$(count q)
[ "$left" -ge 49 ] || fail "| while read; break of 50 messages of 1 KiB left $left in the queue"
expect_rc 0 mq-admin purge q
for i in $(seq 1000 1999); do echo "$i $pad"; done >"$T/lines"
expect_rc 0 mq-send -l q <"$T/lines"
got=$(mq-receive q --all -l 2>/dev/null | head -n1)
[ "$got" = "1000 $pad" ] || fail "| head -n1 printed '${got:0:20}...'"
left=$(count q)
[ "$left" -ge 900 ] || fail "| head -n1 of 1,000 messages of 1 KiB left $left in the queue"
mq-peek q --all -l | sort >"$T/rest"
# Nothing lost: what is not left was the line head printed.
comm -23 <(sort "$T/lines") "$T/rest" | grep -v "^1000 " | grep -q . &&
  fail "| head -n1 lost messages it never printed"
expect_rc 0 mq-admin check
mq-receive q --top 1000 -l 2>/dev/null | while read -r l; do break; done
left=$(count q)
[ "$left" -ge 900 ] || fail "--top 1000 | while read; break left $left"
expect_rc 0 mq-admin check
expect_rc 0 mq-admin purge q

# 3. Closed standard output: the message stays, no store file is written through fd 1.
expect_rc 0 mq-send q BODY1-closed-stdout
mq-receive q >&- 2>"$T/err"
rc=$?
[ "$rc" = 10 ] || fail "mq-receive >&- exited $rc, expected 10"
grep -Eq '^mq-receive: .*standard output' "$T/err" || fail "mq-receive >&-: stderr '$(cat "$T/err")'"
[ "$(count q)" = 1 ] || fail "mq-receive >&- removed the message"
grep -qa BODY1-closed-stdout "$STORE/lock.mdb" && fail "the body was written into lock.mdb"
mq-peek q >&- 2>/dev/null
[ "$?" = 10 ] || fail "mq-peek >&- did not fail"
mq-receive q -n 1 >/dev/null || fail "the message was not there to receive after >&-"
# Closed stderr: the error text goes nowhere, never into a store file.
S2=$T/s2
mq-admin -s "$S2" init >/dev/null
mq-receive -s "$S2" nosuch-queue-closed-stderr 2>&-
[ "$?" = 3 ] || fail "mq-receive nosuch 2>&- did not exit 3"
grep -qa nosuch-queue-closed-stderr "$S2/lock.mdb" "$S2/data.mdb" && fail "an error text was written into a store file"
# Closed stdin: a send from stdin reads nothing; no store file is fd 0.
expect_rc 0 mq-admin -s "$S2" create q2
mq-send -s "$S2" q2 <&- 2>/dev/null
mq-admin -s "$S2" check >/dev/null || fail "the store is damaged after a send with stdin closed"

# 4. A paused peek pins no pages: rounds of sends and receives grow data.mdb no more than
# without it.
A=$T/plain B=$T/paused
pinned_setup "$A" "$B"
churn "$A"
mkfifo "$T/fifo"
mq-peek -s "$B" pq --all -l >"$T/fifo" &
peek=$!
BG+=("$peek")
exec 7<"$T/fifo"
head -c 1000 <&7 >/dev/null   # the peek has started writing; now it is stalled on the pipe
kill -STOP "$peek"
churn "$B"
kill -CONT "$peek"
exec 7<&-
wait "$peek" 2>/dev/null
pinned_check "$A" "$B" "a paused peek"

finish
