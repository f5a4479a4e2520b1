#!/bin/bash
# One named cursor, several processes: the cursor's lock file serializes them, so two loops of
# `mq-peek Q --cursor c --next` never both see the same NEXT message; together they cover every
# message once, without gaps. A third loop with --no-wait-lock either gets its turn or fails
# at once with exit 5 (MQ_ERROR_SHARING_VIOLATION), never with a message someone else saw.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

N=500
expect_rc 0 mq-admin create q
expect_rc 0 mq-send -l q < <(seq 1 $N)
expect_rc 0 mq-peek q --cursor c --first --template '{lookup_id}\n'
expect_out $'1\n'

walker() {  # walker NAME [OPTION]: NEXT until the end of the queue (exit 1)
  local name=$1 rc
  shift
  : >"$T/seen.$name"
  while :; do
    timeout -s KILL 20 mq-peek q --cursor c --next "$@" --template '{lookup_id} {body}\n' \
      >>"$T/seen.$name" 2>"$T/err.$name"
    rc=$?
    case $rc in
      0) ;;
      1) grep -q 'MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088' "$T/err.$name" ||
           echo "$name: exit 1 with '$(cat "$T/err.$name")'" >>"$T/errors"
         return ;;
      5) if [ "$*" = --no-wait-lock ] && grep -q '(MQ_ERROR_SHARING_VIOLATION 0xC00E0009)$' "$T/err.$name"; then
           echo x >>"$T/busy.$name"
           # The one-line error names the queue, as every error of CLI.md does.
           grep -q '^mq-peek: q: ' "$T/err.$name" || cp "$T/err.$name" "$T/badformat"
         else
           echo "$name: exit 5 with '$(cat "$T/err.$name")'" >>"$T/errors"
           return
         fi ;;
      *) echo "$name: exit $rc with '$(cat "$T/err.$name")'" >>"$T/errors"; return ;;
    esac
  done
}
: >"$T/errors"
walker a & pa=$!; BG+=($pa)
walker b & pb=$!; BG+=($pb)
walker n --no-wait-lock & pn=$!; BG+=($pn)
wait $pa $pb $pn

[ -s "$T/errors" ] && fail "walkers failed: $(head -3 "$T/errors")"
[ -e "$T/badformat" ] && fail "a busy cursor's error does not name the queue: $(cat "$T/badformat")"
[ -s "$T/busy.n" ] || echo "note: the --no-wait-lock walker never found the cursor busy" >&2
for w in a b n; do
  cut -d' ' -f1 "$T/seen.$w" | sort -n -c 2>/dev/null ||
    fail "walker $w saw the cursor go backwards: $(tr '\n' ' ' <"$T/seen.$w" | head -c 200)"
  awk '$1 != $2 { print; exit 1 }' "$T/seen.$w" >/dev/null || fail "walker $w printed a wrong body"
done
na=$(wc -l <"$T/seen.a") nb=$(wc -l <"$T/seen.b") nn=$(wc -l <"$T/seen.n")
cat "$T"/seen.[abn] | cut -d' ' -f1 | sort -n >"$T/union"
dups=$(uniq -d "$T/union" | head -5 | tr '\n' ' ')
[ -z "$dups" ] || fail "two processes saw the same NEXT message: $dups"
seq 2 $N >"$T/want"
cmp -s "$T/want" "$T/union" ||
  fail "the walkers together did not see 2..$N once each ($na + $nb + $nn lines): $(diff "$T/want" "$T/union" | head -5 | tr '\n' ' ')"
[ "$na" -gt 0 ] && [ "$nb" -gt 0 ] || fail "one waiting walker saw nothing (a: $na, b: $nb): no contention tested"
# The cursor ends on the last message, and the queue is untouched.
expect_rc 0 mq-peek q --cursor c --current --template '{lookup_id}\n'
expect_out "$N"$'\n'
expect_rc 0 mq-admin stat q --json
grep -q "\"messages\":$N," "$T/out" || fail "the queue changed: $(cat "$T/out")"

# Two concurrent waiters at the end of one cursor: each message sent wakes exactly one of
# them (the other still waits on the lock or in its wait), and neither sees the other's.
start mq-peek q --cursor c --next --wait 10s --template '{lookup_id}\n'; p1=$PID
start mq-peek q --cursor c --next --wait 10s --template '{lookup_id}\n'; p2=$PID
sleep 0.2
expect_rc 0 mq-send q x
expect_rc 0 mq-send q y
expect_bg 0 "$p1"; o1=$(cat "$T/out")
expect_bg 0 "$p2"; o2=$(cat "$T/out")
[ "$(printf '%s\n' "$o1" "$o2" | sort -n | tr '\n' ' ')" = "$((N + 1)) $((N + 2)) " ] ||
  fail "two waiters on one cursor saw '$o1' and '$o2', expected $((N + 1)) and $((N + 2)) once each"

expect_rc 0 mq-admin check
expect_out ''
finish
