#!/bin/bash
# mq-receive --lease: the messages are Locked under a token (stderr, or lease_token in the
# JSON); mq-admin ack commits, nack returns them (in place, abort_count + 1), nack --delay D
# keeps them invisible for D, expiry returns them by itself and wakes a waiting receiver at
# the expiry, not before; ack/nack of an expired or unknown token is exit 5 and changes
# nothing; mq-admin locks --json shows the lease.
. "$(dirname "$0")/lib.sh"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

now_ms() { date +%s%3N; }
iso_ms() { date -d "$1" +%s%3N; }
bodies() { mq-peek q --all --template '{body}:{delivery_count}:{abort_count} ' 2>/dev/null; }

expect_rc 0 mq-admin create q --max-retries 0
for b in a b c; do expect_rc 0 mq-send q "$b"; done

# --- ack commits ---------------------------------------------------------------------------------
expect_rc 0 mq-receive q --lease 30s
expect_out 'a'
expect_err_match '^[0-9]+\.[0-9]+\.[0-9a-f]{32}$'
tok=$(cat "$T/err")
[ "$(bodies)" = 'b:0:0 c:0:0 ' ] || fail "a leased message is visible to peek: $(bodies)"
expect_rc 0 mq-peek q --locked --all --template '{body}:{delivery_count} '
expect_out 'a:1 b:0 c:0 '
expect_rc 0 mq-admin locks --json
jq -e --arg lk 1 'select(.queue == "q") | .kind == "token" and .alive == true and .lookup_ids == [1]
    and (.expires | type) == "string" and .pid > 0' "$T/out" >/dev/null ||
  fail "locks --json during the lease: $(cat "$T/out")"
[ "$(wc -l <"$T/out")" = 1 ] || fail "locks --json shows $(wc -l <"$T/out") leases, expected 1"
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.messages, .locked]' "$T/out")" = '[3,1]' ] || fail "stat during the lease: $(cat "$T/out")"
expect_rc 0 mq-admin ack "$tok"
expect_out ''
[ "$(bodies)" = 'b:0:0 c:0:0 ' ] || fail "after ack: $(bodies)"
expect_rc 0 mq-peek q --locked --all -l
expect_out $'b\nc\n'
expect_rc 0 mq-admin locks
expect_out ''
# A second ack (and a nack) of an ended lease: 5, nothing changes.
expect_rc 5 mq-admin ack "$tok"
expect_err_match '^mq-admin: .*unknown or expired lease token \(MQ_ERROR_TRANSACTION_USAGE 0xC00E0050\)$'
expect_rc 5 mq-admin nack "$tok"
[ "$(bodies)" = 'b:0:0 c:0:0 ' ] || fail "after a repeated ack: $(bodies)"

# --- nack returns in place ------------------------------------------------------------------------
expect_rc 0 mq-receive q --lease 30s --json
[ "$(jq -c '[.body, .delivery_count, .abort_count]' "$T/out")" = '["b",1,0]' ] || fail "lease --json: $(cat "$T/out")"
tok=$(jq -r .lease_token "$T/out")
[[ $tok =~ ^[0-9]+\.[0-9]+\.[0-9a-f]{32}$ ]] || fail "lease_token '$tok'"
expect_rc 0 mq-admin nack "$tok"
[ "$(bodies)" = 'b:1:1 c:0:0 ' ] || fail "after nack: $(bodies)"
expect_rc 5 mq-admin ack "$tok"
[ "$(bodies)" = 'b:1:1 c:0:0 ' ] || fail "ack after nack changed the queue: $(bodies)"
# A token with a wrong secret is unknown; a malformed one is a usage error.
expect_rc 0 mq-receive q --lease 30s
tok=$(cat "$T/err")
expect_rc 5 mq-admin ack "${tok%.*}.00000000000000000000000000000000"
expect_rc 5 mq-admin ack "${tok%%.*}.999999.0123456789abcdef0123456789abcdef"
expect_rc 2 mq-admin ack not-a-token
expect_rc 0 mq-peek q --locked --all --template '{body}:{delivery_count}:{abort_count} '
expect_out 'b:2:1 c:0:0 '
expect_rc 0 mq-admin nack "$tok"
[ "$(bodies)" = 'b:2:2 c:0:0 ' ] || fail "after the 2nd nack: $(bodies)"

# --- nack --delay D: invisible for D --------------------------------------------------------------
# D is 2 s so that the three tools after the nack run inside it even under the sanitizers on a
# loaded machine; they are checked to have.
expect_rc 0 mq-receive q --lease 30s
tok=$(cat "$T/err")
t0=$(now_ms)
expect_rc 0 mq-admin nack --delay 2s "$tok"
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.messages, .locked, .delayed]' "$T/out")" = '[2,0,1]' ] || fail "stat after nack --delay: $(cat "$T/out")"
expect_rc 0 mq-receive q -w 0     # c, while b waits out its delay
expect_out 'c'
expect_rc 1 mq-receive q -w 0
t1=$(now_ms)
((t1 - t0 < 2000)) || fail "the checks after nack --delay 2s took $((t1 - t0)) ms, not inside it"
expect_rc 0 mq-receive q -w 5s --json
t1=$(now_ms)
[ "$(jq -c '[.body, .abort_count]' "$T/out")" = '["b",3]' ] || fail "after the delay: $(cat "$T/out")"
((t1 - t0 >= 1990)) || fail "nack --delay 2s: visible again after $((t1 - t0)) ms"
((t1 - t0 < 3800)) || fail "nack --delay 2s: visible only after $((t1 - t0)) ms"

# --- expiry returns the message; a waiter wakes at the expiry, not before ---------------------------
expect_rc 0 mq-send q e
expect_rc 0 mq-receive q --lease 2s --json
exp=$(iso_ms "$(jq -r .lease_expires "$T/out")")
# A waiter whose timeout ends before the expiry gets nothing (the lease is 2 s so that it
# does even under the sanitizers on a loaded machine; checked).
expect_rc 1 mq-receive q -w 300ms
t1=$(now_ms)
((t1 < exp)) || fail "the 300 ms waiter ended $((t1 - exp)) ms after the lease expired, not before"
(
  timeout 15 mq-receive q -w 10s --json >"$T/waiter.out" 2>"$T/waiter.err"
  echo $? >"$T/waiter.rc"
  now_ms >"$T/waiter.woke"
) &
BG+=($!)
wait $!
rc=$(cat "$T/waiter.rc")
woke=$(cat "$T/waiter.woke")
[ "$rc" = 0 ] || fail "the waiter exited $rc: $(cat "$T/waiter.err")"
[ "$(jq -c '[.body, .delivery_count, .abort_count]' "$T/waiter.out")" = '["e",1,1]' ] ||
  fail "the waiter got $(cat "$T/waiter.out")"
((woke >= exp)) || fail "the waiter woke $((exp - woke)) ms before the lease expired"
((woke - exp < 1500)) || fail "the waiter woke $((woke - exp)) ms after the lease expired"
expect_rc 0 mq-admin locks
expect_out ''

# --- ack of an expired token: 5, and the message stays -----------------------------------------------
expect_rc 0 mq-send q f
expect_rc 0 mq-receive q --lease 300ms
tok=$(cat "$T/err")
sleep 0.4
# First after the expiry: the ack itself finds it expired (and returns the message), exit 5.
expect_rc 5 mq-admin ack "$tok"
expect_err_match 'expired'
[ "$(bodies)" = 'f:1:1 ' ] || fail "after the ack of an expired token: $(bodies)"
expect_rc 0 mq-receive q --lease 300ms
tok=$(cat "$T/err")
sleep 0.4
expect_rc 0 mq-peek q --all --json   # a reader returns it first
cp "$T/out" "$T/before"
expect_rc 5 mq-admin ack "$tok"
expect_rc 5 mq-admin nack "$tok"
expect_rc 0 mq-peek q --all --json
cmp -s "$T/before" "$T/out" || fail "ack/nack of an expired token changed the message: $(cat "$T/out")"
[ "$(jq -c '[.body, .delivery_count, .abort_count]' "$T/out")" = '["f",2,2]' ] || fail "f: $(cat "$T/out")"

# --- one token for several messages ----------------------------------------------------------------
expect_rc 0 mq-send q g
expect_rc 0 mq-receive q -n 2 --lease 30s -l
expect_out $'f\ng\n'
tok=$(cat "$T/err")
expect_rc 0 mq-admin locks --json
[ "$(jq -c '.lookup_ids | length' "$T/out")" = 2 ] || fail "locks --json for -n 2: $(cat "$T/out")"
expect_rc 1 mq-receive q -w 0
expect_rc 0 mq-admin ack "$tok"
expect_rc 1 mq-peek q --locked
expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.messages, .locked, .delayed]' "$T/out")" = '[0,0,0]' ] || fail "stat at the end: $(cat "$T/out")"
expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-admin check
expect_out ''
finish
