#!/bin/bash
# 4 senders and 4 `mq-receive --all --exec CMD` receivers (each restarted in a loop) over
# 20,000 messages; CMD fails ~10% of deliveries; receivers are SIGKILLed now and then and
# restarted. Every message is processed (CMD exit 0) exactly once, every delivery count is
# the exact one, and at the end the queue is empty, nothing is locked and check passes.
#
# Why exactly once can be asserted: CMD appends its record only when it is about to exit 0,
# and a receiver is killed only while its CMD is blocked *before* recording. The kills are
# arranged by CMD itself: at the first delivery of every message whose lookup id is a
# multiple of 401, CMD writes its mq-receive's pid ($PPID) to $T/hang/LOOKUP_ID and execs
# `sleep 60`; a monitor SIGKILLs that mq-receive; PDEATHSIG kills the sleep; the message
# returns (abort count + 1) to whichever receiver looks next. A record without a commit
# would need mq-receive to die between CMD's exit 0 and its commit, which nothing here
# causes, so no record can be duplicated.
#
# Failures are deterministic so that every delivery count can be predicted: delivery D of
# lookup id L fails iff (L * 7919 + D * 104729) % 10 == 0 (about 10%; never twice in a row),
# and the hang happens at D = 1 when L % 401 == 0. Each message's final (recorded) delivery
# count is therefore the first D that neither fails nor hangs, and its abort count D - 1.
. "$(dirname "$0")/lib.sh"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'touch "$T/stop"; for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

SENDERS=4 RECEIVERS=4 PER_SENDER=5000 CHUNK=100 LIMIT=450
expect_rc 0 mq-admin create q --max-retries 1000
mkdir "$T/hang"
: >"$T/errors"; : >"$T/log"; : >"$T/killed"

CMD='if [ "$MQ_DELIVERY_COUNT" = 1 ] && [ $((MQ_LOOKUP_ID % 401)) = 0 ]; then
  echo "$PPID" >"$0/hang/$MQ_LOOKUP_ID.tmp" && mv "$0/hang/$MQ_LOOKUP_ID.tmp" "$0/hang/$MQ_LOOKUP_ID"
  exec sleep 60
fi
[ $(( (MQ_LOOKUP_ID * 7919 + MQ_DELIVERY_COUNT * 104729) % 10 )) = 0 ] && exit 1
IFS= read -r b
printf "%s %s %s %s\n" "$b" "$MQ_LOOKUP_ID" "$MQ_DELIVERY_COUNT" "$MQ_ABORT_COUNT" >>"$0/log"'

sender() {
  local s=$1 i
  for ((i = 0; i < PER_SENDER; i += CHUNK)); do
    if ((i % 1000 == 0)); then   # now and then single sends too
      timeout 30 mq-send q "s$s-$i" || echo "mq-send exited $?" >>"$T/errors"
      seq -f "s$s-%g" $((i + 1)) $((i + CHUNK - 1)) | timeout 30 mq-send -l q || echo "mq-send -l exited $?" >>"$T/errors"
    else
      seq -f "s$s-%g" "$i" $((i + CHUNK - 1)) | timeout 30 mq-send -l q || echo "mq-send -l exited $?" >>"$T/errors"
    fi
  done
}

receiver() {
  local r=$1 rc finished
  while :; do
    if ((SECONDS > LIMIT)) || [ -e "$T/stop" ]; then
      echo "receiver $r gave up after $LIMIT s" >>"$T/errors"
      break
    fi
    finished=0
    [ -e "$T/senders-done" ] && finished=1
    mq-receive q --all -w 100ms --exec sh -c "$CMD" "$T" 2>>"$T/recv-err.$r"
    rc=$?
    case $rc in
      0 | 8 | 137) ;;                    # drained / CMD failed / killed by the monitor
      1) ((finished)) && break ;;        # nothing left (and nothing more coming)
      *) echo "receiver $r: mq-receive exited $rc" >>"$T/errors"; break ;;
    esac
  done
}

monitor() {
  local f
  while [ ! -e "$T/receivers-done" ] && [ ! -e "$T/stop" ]; do
    for f in "$T"/hang/*; do
      [ -e "$f" ] || continue
      case $f in *.tmp) continue ;; esac
      kill -9 "$(cat "$f")" && echo "${f##*/}" >>"$T/killed"
      rm -f "$f"
    done
    sleep 0.02
  done
}

monitor &
mon=$!
BG+=("$mon")
for r in $(seq 1 $RECEIVERS); do receiver "$r" 2>/dev/null & rpids+=($!); done  # no "Killed" job notes
for s in $(seq 1 $SENDERS); do sender "$s" & spids+=($!); done
BG+=("${rpids[@]}" "${spids[@]}")
wait "${spids[@]}"
touch "$T/senders-done"
wait "${rpids[@]}"
touch "$T/receivers-done"
wait "$mon"

[ -s "$T/errors" ] && fail "during the run: $(sort "$T/errors" | uniq -c | head -5)"
# Exactly once: the recorded bodies are the sent ones, each once.
for s in $(seq 1 $SENDERS); do seq -f "s$s-%g" 0 $((PER_SENDER - 1)); done | sort >"$T/expected"
cut -d' ' -f1 "$T/log" | sort >"$T/processed"
total=$(wc -l <"$T/processed")
[ "$total" = $((SENDERS * PER_SENDER)) ] || fail "processed $total messages, expected $((SENDERS * PER_SENDER))"
dups=$(uniq -d "$T/processed" | head -5 | tr '\n' ' ')
[ -z "$dups" ] || fail "messages processed more than once: $dups"
cmp -s "$T/expected" "$T/processed" ||
  fail "the processed messages are not the ones sent: $(diff "$T/expected" "$T/processed" | head -5 | tr '\n' ' ')"
# Exact delivery and abort counts; every hang was killed once.
awk '{ L = $2; D = 1
       while ((L % 401 == 0 && D == 1) || (L * 7919 + D * 104729) % 10 == 0) D++
       if ($3 != D || $4 != D - 1) { print "lookup id " L " (" $1 "): delivery " $3 ", abort " $4 "; expected " D ", " D - 1; bad++ }
       fails += D - 1 - (L % 401 == 0); hangs += (L % 401 == 0) }
     END { print "expected failures " fails " hangs " hangs > "/dev/stderr"; exit bad ? 1 : 0 }' \
  "$T/log" >"$T/counts" 2>"$T/expect" || fail "wrong counts: $(head -n 5 "$T/counts" | tr '\n' ';')"
read -r _ _ fails _ hangs <"$T/expect"
[ "$(sort -n "$T/killed" | tr '\n' ' ')" = "$(seq -s ' ' 401 401 $((SENDERS * PER_SENDER))) " ] ||
  fail "killed for lookup ids $(sort -n "$T/killed" | tr '\n' ' '), expected every multiple of 401"
[ "$(wc -l <"$T/killed")" = "$hangs" ] || fail "$(wc -l <"$T/killed") kills for $hangs hangs"
rolled=$(cat "$T"/recv-err.* | grep -c 'rolled back (MQ_EXEC_FAILED 0xE00E0004)$')
[ "$rolled" = "$fails" ] || fail "$rolled failed commands reported, $fails expected"
other=$(cat "$T"/recv-err.* | grep -Ev 'sh exited with status 1; message [0-9]+ rolled back \(MQ_EXEC_FAILED 0xE00E0004\)$|^mq-receive: q: timed out waiting for a message \(MQ_ERROR_IO_TIMEOUT 0xC00E001B\)$' | head -3)
[ -z "$other" ] || fail "receivers said: $other"

expect_rc 0 mq-admin stat q --json
[ "$(jq -c '[.messages, .locked, .delayed, .bytes]' "$T/out")" = '[0,0,0,0]' ] || fail "left in the queue: $(cat "$T/out")"
expect_rc 1 mq-peek q --locked
expect_rc 0 mq-admin locks
expect_out ''
expect_rc 0 mq-admin check
expect_out ''
finish
