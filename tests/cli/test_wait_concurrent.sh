#!/bin/bash
# Many waiting receivers and a burst of sends: every message is received exactly once, none
# is lost, none is left over. (a) 24 single-shot `mq-receive --wait 10s` processes, all
# asleep, woken by one commit of 24 messages: each takes exactly one. (b) 16 receivers looping
# on `mq-receive --wait 10s` while 4 senders send 800 messages (single sends and -l batches).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

expect_rc 0 mq-admin create q

# (a) One commit makes 24 messages visible; 24 sleeping waiters share them.
N=24
pids=()
for i in $(seq 1 $N); do
  start mq-receive q --wait 10s
  pids+=("$PID")
done
for p in "${pids[@]}"; do wait_blocked "$p" poll; done
expect_rc 0 mq-send -l q < <(seq -f 'burst-%g' 1 $N)
: >"$T/got"
for p in "${pids[@]}"; do
  expect_bg 0 "$p"
  [ -s "$T/err" ] && fail "a waiter wrote to stderr: $(cat "$T/err")"
  cat "$T/out" >>"$T/got"
  echo >>"$T/got"
done
sort "$T/got" >"$T/got.sorted"
seq -f 'burst-%g' 1 $N | sort >"$T/want"
cmp -s "$T/want" "$T/got.sorted" ||
  fail "24 waiters did not get the 24 messages once each: $(diff "$T/want" "$T/got.sorted" | head -5)"
expect_rc 1 mq-peek q

# (b) 16 looping receivers, already waiting, and 4 senders bursting 200 messages each.
RECEIVERS=16 SENDERS=4 PER=200
receiver() {  # receiver N: takes one message at a time until it gets STOP
  local r=$1 body rc
  while :; do
    body=$(timeout -s KILL 30 mq-receive q --wait 10s 2>>"$T/recv-err.$r")
    rc=$?
    if [ $rc != 0 ]; then
      echo "receiver $r: mq-receive exited $rc" >>"$T/errors"
      return
    fi
    [ "$body" = STOP ] && return
    printf '%s\n' "$body" >>"$T/recv.$r"
  done
}
sender() {  # sender N: its 200 messages as single sends and -l batches of 30
  local s=$1 i
  for ((i = 1; i <= PER; i += 40)); do
    timeout -s KILL 30 mq-send q "s$s-$i" || echo "sender $s: mq-send exited $?" >>"$T/errors"
    seq -f "s$s-%g" $((i + 1)) $((i + 39)) | timeout -s KILL 30 mq-send -l q ||
      echo "sender $s: mq-send -l exited $?" >>"$T/errors"
  done
}
: >"$T/errors"
rpids=()
for r in $(seq 1 $RECEIVERS); do
  : >"$T/recv.$r"
  receiver "$r" &
  rpids+=($!)
  BG+=($!)
done
# Let every receiver fall asleep in its first wait before the burst.
asleep() {  # asleep PID: the mq-receive somewhere under PID sleeps in poll()
  local c
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    case $(cat /proc/"$c"/wchan 2>/dev/null) in *poll_schedule*) return 0 ;; esac
    asleep "$c" && return 0
  done
  return 1
}
for p in "${rpids[@]}"; do
  for ((i = 0; i < 500; i++)); do
    asleep "$p" && break
    sleep 0.01
  done
  asleep "$p" || fail "receiver $p never fell asleep"
done
spids=()
for s in $(seq 1 $SENDERS); do
  sender "$s" &
  spids+=($!)
  BG+=($!)
done
wait "${spids[@]}"
# FIFO: the STOPs come after every message of the burst, so a receiver that gets one has
# nothing left to take.
expect_rc 0 mq-send -l q < <(yes STOP | head -n $RECEIVERS)
wait "${rpids[@]}"

[ -s "$T/errors" ] && fail "tools failed: $(sort "$T/errors" | uniq -c | head -5)"
cat "$T"/recv-err.* 2>/dev/null | grep -q . && fail "receivers wrote errors: $(cat "$T"/recv-err.* | head -3)"
for s in $(seq 1 $SENDERS); do seq -f "s$s-%g" 1 $PER; done | sort >"$T/want"
cat "$T"/recv.[0-9]* | sort >"$T/got"
total=$(wc -l <"$T/got")
[ "$total" = $((SENDERS * PER)) ] || fail "received $total messages, expected $((SENDERS * PER))"
dups=$(uniq -d "$T/got" | head -3)
[ -z "$dups" ] || fail "received more than once: $dups"
cmp -s "$T/want" "$T/got" || fail "received set differs from sent: $(diff "$T/want" "$T/got" | head -5)"
busy=0
for r in $(seq 1 $RECEIVERS); do [ -s "$T/recv.$r" ] && busy=$((busy + 1)); done
[ "$busy" -ge 2 ] || fail "only $busy of $RECEIVERS receivers got any message"
# Nothing left over.
expect_rc 1 mq-peek q --all -l
expect_out ''
expect_rc 0 mq-admin check
expect_out ''
finish
