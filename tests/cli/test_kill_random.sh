#!/bin/bash
# SIGKILL at random moments, 201 trials: each trial kills one victim, in turn
#   R  mq-receive --all --exec CMD   (CMD records the body, after a short sleep, and exits 0)
#   L  mq-send -l   (100 lines)
#   X  mq-send --tx -l (100 lines)
# (the sends' input arrives in two halves, 10 ms apart, in every other trial)
# while a helper sender (single sends) and a helper receiver (-n 3 --exec CMD) run at the same
# time, untouched. After every trial the whole history is accounted for, `mq-admin locks` is
# empty once a reader has looked, and `mq-admin check` passes.
#
# The invariants. Let SENT be the bodies of every send that exited 0, plus the lines of killed
# sends found stored right after their trial (committed: from then on they are SENT); P the
# multiset of bodies in $T/log (appended by CMD just before it exits 0, or by a plain drain
# receive); Q the bodies in the queue (mq-peek --all, which first returns dead holders'
# messages); n(b) = count_P(b) + count_Q(b). A receiver killed while its CMD runs kills CMD
# (PDEATHSIG) and its message returns. So a body can be in P and also come back only if the
# kill fell after CMD's append and before mq-receive's commit: CMD writes the body it works on
# to $T/cur/<mq-receive pid> first, and a killed receiver's last such body earns one allowance.
#   1. nothing lost:      n(b) >= 1 for every b in SENT
#   2. nothing invented:  every body in P or Q is in SENT or among the lines of this trial's
#                         killed send (so no half-written or corrupted body, and no line of an
#                         earlier killed send that was absent after its trial appears later)
#   3. at most once more: n(b) - 1 <= allowance(b) for every b (with no allowance: exactly once)
#                         and Q holds no body twice
#   4. all or none:       of a killed `mq-send --tx -l` of K lines, 0 or K are stored (in P or Q)
#   5. in order:          of a killed `mq-send -l`, the stored lines are a prefix of its input
#   6. no leftovers:      no lease is left (mq-admin locks prints nothing), stat locked = 0
#   7. consistent:        mq-admin check exits 0 and prints nothing
# The kills must also land while the victims run (at least 1 in 4 trials of each kind, and
# some sends killed before their commit), or the trials prove nothing.
# For debugging: MQ_KILL_TRIALS=N (default 201), KINDS=R (or L, X, RX, ...) picks the victims.
. "$(dirname "$0")/lib.sh"
BG=()
_prev_exit=$(trap -p EXIT); _prev_exit=${_prev_exit#trap -- \'}; _prev_exit=${_prev_exit%\' EXIT}
trap 'for p in "${BG[@]}"; do ours "$p" && kill -9 "$p" 2>/dev/null; done; '"$_prev_exit" EXIT

TRIALS=${MQ_KILL_TRIALS:-201}
K=100   # lines per victim send
expect_rc 0 mq-admin create q --max-retries 0   # kills must never poison anything here
mkdir "$T/cur"
: >"$T/sent"; : >"$T/log"; : >"$T/trace"; : >"$T/allow"; : >"$T/errors"
# CMD: the body to cur/<mq-receive pid>, sleep 0-90 ms, append the body to the log, exit 0.
CMD='IFS= read -r b
printf "%s\n" "$b" >"$0/cur/$PPID"
sleep "0.0$((MQ_LOOKUP_ID % 10))"
printf "%s\n" "$b" >>"$0/log"
printf "%s %s %s\n" "$PPID" "$MQ_LOOKUP_ID" "$b" >>"$0/trace"'

# bodies TRIAL SOURCE N: N distinct bodies with 40 hex digits that depend on all three.
bodies() {
  awk -v t="$1" -v s="$2" -v k="$3" 'BEGIN { for (i = 1; i <= k; i++) { f = "";
    for (j = 0; j < 10; j++) f = f sprintf("%04x", (i * 7919 + j * 104729 + t * 31 + length(s)) % 65536);
    printf "t%d-%s-%d-%s\n", t, s, i, f } }'
}
count() { mq-admin stat q --json | grep -o '"messages":[0-9]*' | cut -d: -f2; }
# rand_sleep MAX_MS: 0 to MAX_MS ms, without starting a process (a read that times out).
mkfifo "$T/fifo"
exec 9<>"$T/fifo"
rand_sleep() {
  local ms=$((RANDOM % ($1 + 1)))
  ((ms)) && read -r -t "$(printf '0.%03d' "$ms")" -u 9
  return 0
}

helper_send() {
  local t=$1 j b
  for j in 1 2 3; do
    b=$(bodies "$t" hs-$j 1)
    if timeout 30 mq-send q "$b" 2>>"$T/helper.err"; then printf '%s\n' "$b" >>"$T/sent.helper"
    else echo "trial $t: helper mq-send exited $?" >>"$T/errors"; fi
  done
}
helper_recv() {
  timeout 30 mq-receive q -n 3 --exec sh -c "$CMD" "$T" 2>"$T/helper_recv.err"
  local rc=$?
  cat "$T/helper_recv.err" >>"$T/helper.err"
  [ $rc = 0 ] || [ $rc = 1 ] ||
    echo "trial $1: helper mq-receive exited $rc: $(tail -n 2 "$T/helper_recv.err" | tr '\n' ' ')" >>"$T/errors"
}

declare -A killed=([R]=0 [L]=0 [X]=0) ran=([R]=0 [L]=0 [X]=0) none=([L]=0 [X]=0) all=([L]=0 [X]=0)
for ((t = 1; t <= TRIALS; t++)); do
  kind=${KINDS:-RLX}
  kind=${kind:$((t % ${#kind})):1}
  rm -f "$T"/cur/* "$T/pending"
  : >"$T/sent.helper"
  # Keep a backlog for the receivers, and the queue small enough to peek every trial.
  n=$(count)
  if ((n < 40)); then
    bodies "$t" top 60 >"$T/top"
    if mq-send -l q <"$T/top"; then cat "$T/top" >>"$T/sent"; else fail "trial $t: top-up send failed"; fi
  elif ((n > 400)); then
    mq-receive q -n 200 -l >>"$T/log" || fail "trial $t: drain receive failed"
  fi

  helper_send "$t" &
  hs=$!
  helper_recv "$t" &
  hr=$!
  BG+=("$hs" "$hr")
  case $kind in
    R)
      mq-receive q --all --exec sh -c "$CMD" "$T" >/dev/null 2>>"$T/victim.err" &
      victim=$!
      BG+=("$victim")
      rand_sleep 250 ;;
    L | X)
      bodies "$t" "$kind" "$K" >"$T/pending"
      tx=()
      [ "$kind" = X ] && tx=(--tx)
      if ((t % 2)); then   # the input arrives in two halves, 10 ms apart
        { head -n $((K / 2)) "$T/pending"; read -r -t 0.01 -u 9; tail -n +$((K / 2 + 1)) "$T/pending"; } |
          mq-send "${tx[@]}" -l q 2>>"$T/victim.err" &
        victim=$!
        BG+=("$victim")
        rand_sleep 16
      else
        mq-send "${tx[@]}" -l q <"$T/pending" 2>>"$T/victim.err" &
        victim=$!
        BG+=("$victim")
        rand_sleep 6
      fi ;;
  esac
  kill -9 "$victim" 2>/dev/null
  wait "$victim" 2>/dev/null
  vrc=$?
  echo "trial $t: $kind victim $victim exited $vrc" >>"$T/trace"
  [ "$kind" = R ] && wait_holder_gone "$victim"
  wait "$hs" "$hr"
  ran[$kind]=$((ran[$kind] + 1))
  [ $vrc = 137 ] && killed[$kind]=$((killed[$kind] + 1))
  case $kind:$vrc in
    R:0 | R:1) ;;
    R:137) [ -s "$T/cur/$victim" ] && cat "$T/cur/$victim" >>"$T/allow" ;;
    [LX]:0) cat "$T/pending" >>"$T/sent"; rm -f "$T/pending" ;;   # exited 0: all must be there
    [LX]:137) ;;
    *) fail "trial $t: the $kind victim exited $vrc: $(tail -n 1 "$T/victim.err")" ;;
  esac
  cat "$T/sent.helper" >>"$T/sent"
  [ -s "$T/errors" ] && { fail "trial $t: $(cat "$T/errors")"; : >"$T/errors"; }

  # Account. The peek returns what dead holders held; then nothing may be locked.
  mq-peek q --all -l >"$T/queue" 2>"$T/peek.err"
  prc=$?
  [ $prc = 0 ] || [ $prc = 1 ] || fail "trial $t: mq-peek exited $prc: $(cat "$T/peek.err")"
  locks=$(mq-admin locks)
  [ -z "$locks" ] || fail "trial $t: leases left after the trial: $locks"
  [ "$(mq-admin stat q --json | jq .locked)" = 0 ] || fail "trial $t: stat shows locked messages"
  touch "$T/pending"
  awk -v kind="$kind" -v vrc="$vrc" -v t="$t" -v present="$T/present" '
    FILENAME == ARGV[1] { sent[$0] = 1; next }
    FILENAME == ARGV[2] { allow[$0]++; next }
    FILENAME == ARGV[3] { pend[$0] = FNR; npend++; next }
    FILENAME == ARGV[4] { inq[$0]++; n[$0]++; next }
    { n[$0]++ }
    function bad(msg) { print "trial " t ": " msg; errors++ }
    END {
      for (b in inq) if (inq[b] > 1) bad("in the queue " inq[b] " times: " b)
      for (b in n) {
        if (!(b in sent) && !(b in pend)) bad("unknown body (never sent, or half-written): " b)
        if (n[b] - 1 > allow[b] + 0)
          bad("delivered " n[b] " times (" n[b] - inq[b] " in the log, " inq[b] + 0 " in the queue) with " allow[b] + 0 " allowance: " b)
      }
      for (b in sent) if (!(b in n)) bad("lost: " b)
      if (npend) {
        got = 0; maxi = 0
        for (b in pend) if (b in n) { got++; print b > present; if (pend[b] > maxi) maxi = pend[b] }
        close(present)
        if (kind == "X" && got != 0 && got != npend) bad("killed --tx send half-visible: " got " of " npend)
        if (kind == "L" && got != maxi) bad("killed -l send stored " got " lines, not a prefix (up to line " maxi ")")
        print (got == 0 ? "none" : got == npend ? "all" : "part") > (present ".outcome")
      }
      exit errors ? 1 : 0
    }' "$T/sent" "$T/allow" "$T/pending" "$T/queue" "$T/log" >"$T/acct" || {
    fail "$(head -n 5 "$T/acct")"
    # Who took a body twice (mq-receive pid, lookup id), for the next one to look at this.
    for b in $(grep -o 'allowance: .*' "$T/acct" | cut -d' ' -f2 | head -n 3); do
      echo "trace of $b (pid lookup-id): $(grep -F "$b" "$T/trace" | cut -d' ' -f1,2 | tr '\n' ';')" >&2
      echo "victims: $(grep '^trial' "$T/trace" | tail -n 6 | tr '\n' ';')" >&2
    done
  }
  if [ -s "$T/pending" ]; then
    out=$(cat "$T/present.outcome")
    [ "$vrc" = 137 ] && { [ "$out" = none ] && none[$kind]=$((none[$kind] + 1)); [ "$out" = all ] && all[$kind]=$((all[$kind] + 1)); }
    [ -s "$T/present" ] && cat "$T/present" >>"$T/sent"   # committed: must never get lost
    rm -f "$T/present" "$T/present.outcome"
  fi
  run mq-admin check
  [ "$RC" = 0 ] && [ ! -s "$T/out" ] || fail "trial $t: mq-admin check exited $RC: $(head -n 3 "$T/out" "$T/err")"
  ((FAILS > 20)) && break
done

summary="trials R ${ran[R]} (killed ${killed[R]}), L ${ran[L]} (killed ${killed[L]}: none ${none[L]}, all ${all[L]}), X ${ran[X]} (killed ${killed[X]}: none ${none[X]}, all ${all[X]}); allowances $(wc -l <"$T/allow") (used: $(sort "$T/log" "$T/queue" | uniq -d | wc -l)); processed $(wc -l <"$T/log"), left $(count)"
echo "$summary"
# The kills must have hit running victims often enough for the trials to mean something.
for k in R L X; do
  ((ran[$k] == 0 || killed[$k] * 4 >= ran[$k])) || fail "only ${killed[$k]} of ${ran[$k]} $k victims were killed while running"
done
((ran[X] == 0 || none[X] >= 1)) || fail "no --tx send was killed before its commit"
((ran[L] == 0 || none[L] >= 1)) || fail "no -l send was killed before its commit"
finish
