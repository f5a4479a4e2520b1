#!/bin/bash
# mq-send --dedup KEY: a second send with KEY within the queue's dedup window exits 0, says
# "duplicate ... dropped" on stderr and stores nothing (even after the first was received);
# after the window (mq-admin create --dedup-window) the key stores again. Keys are per queue;
# with -l the key names a whole --tx send; concurrent sends with one key store one message.
. "$(dirname "$0")/lib.sh"

count() { mq-admin stat "$1" --json | grep -o '"messages":[0-9]*' | cut -d: -f2; }

expect_rc 0 mq-admin create q
expect_rc 0 mq-admin list --json
[ "$(jq 'select(.queue == "q") | .dedup_window_ms' "$T/out")" = 300000 ] || fail "default dedup window: $(cat "$T/out")"
expect_rc 0 mq-send --dedup k1 --print-id q first
[ ! -s "$T/err" ] || fail "first --dedup send wrote to stderr: $(cat "$T/err")"
id1=$(cat "$T/out")
expect_rc 0 mq-send --dedup k1 --print-id q second
expect_out "$id1
"
expect_err_match "^mq-send: q: duplicate of \{[-0-9a-f]+\}\\\\[0-9]+ \(dedup key 'k1'\): dropped$"
grep -qF "duplicate of $id1 " "$T/err" || fail "the duplicate note does not name $id1: $(cat "$T/err")"
[ "$(count q)" = 1 ] || fail "two sends with one key stored $(count q) messages"
expect_rc 0 mq-peek q --all -l
expect_out $'first\n'
# Received, the key is still remembered for the window.
expect_rc 0 mq-receive q
expect_rc 0 mq-send --dedup k1 q third
[ "$(count q)" = 0 ] || fail "a duplicate of a received message was stored"
# Other keys, and the same key in another queue, store.
expect_rc 0 mq-send --dedup k2 q other
expect_rc 0 mq-admin create q2
expect_rc 0 mq-send --dedup k1 q2 elsewhere
[ "$(count q)" = 1 ] && [ "$(count q2)" = 1 ] || fail "keys are not per queue: q $(count q), q2 $(count q2)"
# Without --dedup nothing is dropped.
expect_rc 0 mq-send q other
[ "$(count q)" = 2 ] || fail "a plain send of an equal body was dropped"

# --- with -l: --tx needed; the key names the whole send ----------------------------------------------
expect_rc 2 mq-send --dedup batch -l q < <(printf 'x\ny\n')
expect_rc 0 mq-send --tx --dedup batch -l q < <(printf 'x\ny\n')
expect_rc 0 mq-send --tx --dedup batch -l q < <(printf 'z\nw\nv\n')
expect_err_match "dedup key 'batch'\): dropped$"
expect_rc 0 mq-peek q --all -l
expect_out $'other\nother\nx\ny\n'

# --- the window ------------------------------------------------------------------------------------
# A key is remembered for the window its send had. The window is 2 s so that the sends meant to be
# inside it are, even under the sanitizers on a loaded machine; each is checked to have been.
ms() { date +%s%3N; }
expect_rc 0 mq-admin create w --dedup-window 2s
expect_rc 0 mq-send --dedup k w w1
t0=$(ms)
expect_rc 0 mq-send --dedup k w w2
t1=$(ms)
((t1 - t0 < 2000)) || fail "the second send took $((t1 - t0)) ms, not inside the window"
expect_err_match 'dropped$'
[ "$(count w)" = 1 ] || fail "a duplicate within 2 s was stored"
sleep 2.1
expect_rc 0 mq-send --dedup k w w3
t0=$(ms)
[ ! -s "$T/err" ] || fail "a send after the window was called a duplicate: $(cat "$T/err")"
expect_rc 0 mq-send --dedup k w w4
t1=$(ms)
((t1 - t0 < 2000)) || fail "the fourth send took $((t1 - t0)) ms, not inside the window"
expect_err_match 'dropped$'
expect_rc 0 mq-peek w --all -l
expect_out $'w1\nw3\n'
# The window can be changed on an existing queue: a key sent after the change is remembered for
# the new window (5 min), past the end of the old one (2 s); sweep does not forget it.
expect_rc 0 mq-admin set w --dedup-window 5m
expect_rc 0 mq-send --dedup k5 w w5
sleep 2.1
expect_rc 0 mq-admin sweep
expect_rc 0 mq-send --dedup k5 w w6
expect_err_match 'dropped$'
expect_rc 0 mq-peek w --all -l
expect_out $'w1\nw3\nw5\n'
expect_rc 2 mq-admin create bad --dedup-window 0

# --- concurrent sends with one key: one stored, the rest dropped ---------------------------------------
expect_rc 0 mq-admin create race
for i in $(seq 8); do
  timeout 20 mq-send --dedup same race "r$i" 2>"$T/race.$i" &
  pids+=($!)
done
rcs=''
for p in "${pids[@]}"; do wait "$p"; rcs+="$? "; done
[ "$rcs" = '0 0 0 0 0 0 0 0 ' ] || fail "concurrent --dedup sends exited: $rcs"
[ "$(count race)" = 1 ] || fail "8 concurrent sends with one key stored $(count race) messages"
[ "$(cat "$T"/race.* | grep -c 'dropped$')" = 7 ] || fail "expected 7 duplicate notes: $(cat "$T"/race.*)"

expect_rc 0 mq-admin check
expect_out ''
finish
