#!/bin/bash
# mq-watch --max-readers N --exec CMD (an activator): processes every message exactly once,
# never runs more than N commands at once (and does reach N), starts receivers for messages
# that arrive later; SIGTERM ends it with exit 0 after the running commands finish, nothing
# left Locked; disabling or deleting the queue ends it with exit 5.
. "$(dirname "$0")/lib.sh"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

count() { mq-admin stat "$1" --json | grep -o '"messages":[0-9]*' | cut -d: -f2; }
queue_empty() { [ "$(count q)" = 0 ]; }
done_count() { [ "$(find "$T/done" -type f | wc -l)" -ge "$1" ]; }

# CMD: takes the lowest free slot (mkdir is atomic), so a slot number above N means more than
# N commands held slots at once; writes one file per message, named by MQ_ID, refusing to
# overwrite one (a second processing is recorded in $S/dups); sleeps; frees its slot.
CMD='S=$0
i=1
while ! mkdir "$S/slot.$i" 2>/dev/null; do i=$((i + 1)); done
echo "$i" >>"$S/slots"
IFS= read -r body
f="$S/done/$(printf %s "$MQ_ID" | tr "\\\\{}" "___")"
if (set -C; printf "%s\n" "$body" >"$f") 2>/dev/null; then :; else echo "$MQ_ID" >>"$S/dups"; fi
sleep "$SLEEP"
rmdir "$S/slot.$i"'
mkdir "$T/done"
export SLEEP=0.02

expect_rc 0 mq-admin create q --max-retries 0
seq -f 'm%g' 200 | mq-send -l q
timeout --foreground 120 mq-watch q --max-readers 3 --exec sh -c "$CMD" "$T" >"$T/watch.out" 2>"$T/watch.err" &
watch=$!
BG+=("$watch")
until_true 60 queue_empty || fail "200 messages were not processed in 60 s ($(count q) left)"
# Messages arriving later start receivers again.
seq -f 'm%g' 201 250 | mq-send -l q
until_true 30 done_count 250 || fail "the 50 later messages were not processed"
until_true 5 queue_empty || fail "queue not empty: $(count q)"
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.messages, .locked]' "$T/out")" = '[0,0]' ] || fail "stat after processing: $(cat "$T/out")"

[ ! -s "$T/dups" ] || fail "messages processed twice: $(head -3 "$T/dups")"
cat "$T"/done/* | sort >"$T/got"
seq -f 'm%g' 250 | sort >"$T/want"
cmp -s "$T/want" "$T/got" || fail "processed bodies differ from the sent ones: $(diff "$T/want" "$T/got" | head -5 | tr '\n' ' ')"
maxslot=$(sort -n "$T/slots" | tail -n1)
[ "$maxslot" = 3 ] || fail "with --max-readers 3 up to $maxslot commands ran at once (expected exactly 3 at the peak)"
[ "$(wc -l <"$T/slots")" = 250 ] || fail "CMD ran $(wc -l <"$T/slots") times for 250 messages"

# --- SIGTERM while commands run: they finish (and commit), then exit 0 -----------------------------
export SLEEP=0.3
# The exported SLEEP reaches new commands only through a new mq-watch: stop this one first.
kill -TERM "$watch"
wait "$watch"
rc=$?
[ "$rc" = 0 ] || fail "mq-watch exited $rc on SIGTERM while idle: $(cat "$T/watch.err")"
[ ! -s "$T/watch.err" ] && [ ! -s "$T/watch.out" ] || fail "mq-watch printed: $(cat "$T/watch.out" "$T/watch.err")"
seq -f 'n%g' 30 | mq-send -l q
: >"$T/slots"
timeout --foreground 120 mq-watch q --max-readers 3 --exec sh -c "$CMD" "$T" 2>"$T/watch.err" &
watch=$!
BG+=("$watch")
until_true 10 test -s "$T/slots" || fail "no command started"
sleep 0.1
kill -TERM "$watch"
t0=$(date +%s%3N)
wait "$watch"
rc=$?
t1=$(date +%s%3N)
[ "$rc" = 0 ] || fail "mq-watch exited $rc on SIGTERM: $(cat "$T/watch.err")"
((t1 - t0 < 3000)) || fail "mq-watch took $((t1 - t0)) ms to stop"
started=$(wc -l <"$T/slots")
# Every started command finished: slots freed, its message committed (removed).
[ -z "$(find "$T" -maxdepth 1 -name 'slot.*')" ] || fail "a command was cut short: slots left $(ls -d "$T"/slot.* | tr '\n' ' ')"
left=$(count q)
[ "$((started + left))" = 30 ] || fail "SIGTERM: $started commands ran and $left messages are left, expected 30 in all"
((started >= 1 && started < 30)) || fail "SIGTERM stopped nothing: $started of 30 ran"
expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-admin stat q --json
[ "$(jq .locked "$T/out")" = 0 ] || fail "locked after SIGTERM: $(cat "$T/out")"
[ -z "$(pgrep -f "mq-receive -s $STORE")" ] || fail "receivers outlived mq-watch: $(pgrep -af "mq-receive -s $STORE")"
[ ! -s "$T/dups" ] || fail "messages processed twice: $(head -3 "$T/dups")"

# --- disabling the queue: exit 5 after the running commands finish ------------------------------------
: >"$T/slots"
timeout --foreground 120 mq-watch q --max-readers 2 --exec sh -c "$CMD" "$T" 2>"$T/watch.err" &
watch=$!
BG+=("$watch")
until_true 10 test -s "$T/slots" || fail "no command started after restart"
expect_rc 0 mq-admin set q --status off
wait "$watch"
rc=$?
[ "$rc" = 5 ] || fail "mq-watch exited $rc when the queue was disabled, expected 5"
grep -q '^mq-watch: q: queue was disabled (status OFF) (MQ_ERROR_QUEUE_NOT_ACTIVE 0xC00E0004)$' "$T/watch.err" ||
  fail "mq-watch stderr: $(cat "$T/watch.err")"
[ -z "$(find "$T" -maxdepth 1 -name 'slot.*')" ] || fail "a command was cut short by the disable"
expect_rc 0 mq-admin locks
expect_out ''
[ ! -s "$T/dups" ] || fail "messages processed twice: $(head -3 "$T/dups")"
# A disabled queue: mq-watch --exec refuses at once (5).
expect_rc 5 timeout 10 mq-watch q --exec true

# --- deleting the queue: exit 5 --------------------------------------------------------------------
expect_rc 0 mq-admin create gone
timeout --foreground 60 mq-watch gone --exec true 2>"$T/watch.err" &
watch=$!
BG+=("$watch")
# Deleted once mq-watch waits on it (sleeps in poll, after it found the queue), not after a
# fixed sleep: a mq-watch that starts after the delete finds no queue (3).
waiting() {
  local c
  c=$(cat /proc/"$watch"/task/*/children 2>/dev/null)
  [ -n "$c" ] && grep -qs poll "/proc/${c%% *}/wchan"
}
until_true 10 waiting || fail "mq-watch never waited on the queue 'gone'"
expect_rc 0 mq-admin delete gone
wait "$watch"
rc=$?
[ "$rc" = 5 ] || fail "mq-watch exited $rc when the queue was deleted, expected 5: $(cat "$T/watch.err")"

# A message that arrives while a command runs gets a reader of its own at once (with room
# under --max-readers), not when the running one ends: the running receiver holds its
# message, so it is no receiver still to come.
expect_rc 0 mq-admin create late
mq-watch late --max-readers 2 --exec bash -c 'read -r b; echo "$b $EPOCHREALTIME" >>"$0"; sleep 3' \
  "$T/late" >/dev/null 2>&1 &
late_watch=$!
BG+=("$late_watch")
expect_rc 0 mq-send late a
until_true 10 test -s "$T/late" || fail "mq-watch never ran the command for a"
expect_rc 0 mq-send late b
until_true 10 grep -q '^b ' "$T/late" || fail "b never ran"
gap=$(awk '{ t[$1] = $2 } END { printf "%d", (t["b"] - t["a"]) * 1000 }' "$T/late")
((gap < 2000)) || fail "b started $gap ms after a: it waited for a's command to end"
kill "$late_watch" 2>/dev/null
wait "$late_watch" 2>/dev/null

# Every message of q is either processed once or still there.
expect_rc 0 mq-admin set q --status on
[ "$(( $(find "$T/done" -type f | wc -l) + $(count q) ))" = 280 ] ||
  fail "processed $(find "$T/done" -type f | wc -l) + left $(count q) != 280 sent"
expect_rc 0 mq-admin check
expect_out ''
finish
