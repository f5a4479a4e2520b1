#!/bin/bash
# SIGKILL at chosen points of a transaction, with strace's fault injection
# (-e inject=SYSCALL:signal=KILL:when=N kills the process on entering its Nth SYSCALL, before
# the call runs). Every LMDB commit is: data pages (writev/pwrite), one fdatasync, then the
# meta page; so "fdatasync N" is a kill with the Nth commit's pages written but not committed.
#
#   mq-receive --exec:  before the lease lock (flock 1), inside the Lock commit (fdatasync 1):
#                       the message is untouched (delivery 0, abort 0) and CMD never ran;
#                       after the Lock commit, before CMD (clone 1): it returns, delivery 1,
#                       abort 1; after CMD recorded, before the commit (CMD kills mq-receive;
#                       and fdatasync 2): it returns, delivery 1, abort 1, and was recorded once
#                       (the at-least-once window: processing it again records it twice);
#                       after the commit (unlink 1): gone, recorded once.
#   mq-send -l of 25,000 lines (three batches): killed in commit N, exactly the first N-1
#                       batches (10,000 lines each, in order) are stored.
#   mq-send --tx -l of 25,000 lines: none, or (killed on exit) all.
#   mq-admin ack: killed in its commit, the lease is still open and a second ack commits it.
# After every kill: a reader returns what the dead process held, no lease is left, the order
# of the queue is unchanged, and mq-admin check passes.
. "$(dirname "$0")/lib.sh"

if ! command -v strace >/dev/null 2>&1 || ! strace -o /dev/null -e trace=none true 2>/dev/null; then
  skip "strace is missing or cannot trace here"
fi
# kill_at SYSCALL N CMD...: runs CMD, SIGKILLed on entering its Nth SYSCALL; RC its status.
kill_at() {
  local sc=$1 n=$2
  shift 2
  # LeakSanitizer cannot run under ptrace (it exits 1): off for the traced tool only.
  { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 60 strace -o /dev/null \
      -e trace="$sc" -e inject="$sc":signal=KILL:when="$n" "$@" >"$T/out" 2>"$T/err"; } 2>/dev/null
  RC=$?   # (the braces keep bash's "Killed" notes out of the log)
}
state() { mq-peek q --all --template '{body}:{delivery_count}:{abort_count} ' 2>/dev/null; }
after_kill() {  # after_kill WHAT: the checks every kill ends with
  [ -z "$(mq-admin locks)" ] || fail "$1: a lease is left: $(mq-admin locks)"
  run mq-admin check
  [ "$RC" = 0 ] && [ ! -s "$T/out" ] || fail "$1: mq-admin check exited $RC: $(cat "$T/out" "$T/err")"
}

expect_rc 0 mq-admin create q --max-retries 0
REC='cat >>"$0"; echo >>"$0"'

# --- mq-receive --exec ---------------------------------------------------------------------
for point in flock:1:untouched fdatasync:1:untouched clone:1:returned self:0:recorded \
  fdatasync:2:recorded unlink:1:committed; do
  IFS=: read -r sc n outcome <<<"$point"
  mq-receive q --all -0 >/dev/null 2>&1
  expect_rc 0 mq-send q a
  expect_rc 0 mq-send q b
  : >"$T/rec"
  if [ "$sc" = self ]; then   # CMD records, then SIGKILLs its mq-receive before the commit
    { run timeout 60 mq-receive q --exec sh -c "$REC"'; kill -KILL $PPID; sleep 5' "$T/rec"; } 2>/dev/null
  else
    kill_at "$sc" "$n" mq-receive q --exec sh -c "$REC" "$T/rec"
  fi
  [ "$RC" = 137 ] || fail "$sc $n: mq-receive exited $RC, expected 137 (killed): $(cat "$T/err")"
  # The command's processes hold the lease until they end (mq-receive(1), --exec): after the
  # self-kill, its `sleep 5` may still be running for a while.
  for ((i = 0; i < 500; i++)); do
    mq-admin locks 2>/dev/null | grep -q '	alive	' || break
    sleep 0.02
  done
  case $outcome in
    untouched) want_state='a:0:0 b:0:0 ' want_rec='' ;;
    returned) want_state='a:1:1 b:0:0 ' want_rec='' ;;
    recorded) want_state='a:1:1 b:0:0 ' want_rec='a' ;;
    committed) want_state='b:0:0 ' want_rec='a' ;;
  esac
  [ "$(state)" = "$want_state" ] || fail "killed at $sc $n: the queue is '$(state)', expected '$want_state'"
  [ "$(cat "$T/rec")" = "$want_rec" ] || fail "killed at $sc $n: CMD recorded '$(cat "$T/rec")', expected '$want_rec'"
  after_kill "mq-receive killed at $sc $n"
  # Processing goes on normally: a then b, each recorded once more.
  expect_rc 0 mq-receive q --all --exec sh -c "$REC" "$T/rec"
  want=$(printf '%s\n' $want_rec a b | sed '/^$/d')
  [ "$outcome" = committed ] && want=$(printf 'a\nb')
  [ "$(cat "$T/rec")" = "$want" ] || fail "after the kill at $sc $n CMD recorded '$(cat "$T/rec" | tr '\n' ' ')'"
done

# --- mq-send -l: batches commit in order, each all or nothing -------------------------------------
seq -f 'line-%g' 25000 >"$T/lines"
for n in 1 2 3; do
  mq-receive q --all -0 >/dev/null 2>&1
  kill_at fdatasync "$n" mq-send -l q <"$T/lines"
  [ "$RC" = 137 ] || fail "mq-send -l killed in commit $n exited $RC"
  got=$(mq-peek q --all -l 2>/dev/null | wc -l)
  [ "$got" = $(((n - 1) * 10000)) ] || fail "mq-send -l killed in commit $n stored $got lines, expected $(((n - 1) * 10000))"
  mq-peek q --all -l 2>/dev/null | cmp -s - <(head -n "$got" "$T/lines") || fail "mq-send -l killed in commit $n: not the first $got lines"
  after_kill "mq-send -l killed in commit $n"
done

# --- mq-send --tx -l: one commit ----------------------------------------------------------------
mq-receive q --all -0 >/dev/null 2>&1
kill_at fdatasync 1 mq-send --tx -l q <"$T/lines"
[ "$RC" = 137 ] || fail "mq-send --tx -l killed in its commit exited $RC"
[ "$(state)" = '' ] || fail "mq-send --tx -l killed in its commit stored $(mq-peek q --all -l | wc -l) lines"
after_kill "mq-send --tx -l killed in its commit"
kill_at fdatasync 2 mq-send --tx -l q <"$T/lines"
[ "$RC" = 0 ] || fail "mq-send --tx -l made more than one commit (exit $RC with a kill at the 2nd)"
kill_at exit_group 1 mq-send --tx -l q <"$T/lines"
[ "$RC" = 137 ] || fail "mq-send --tx -l killed on exit exited $RC"
got=$(mq-peek q --all -l | wc -l)
[ "$got" = 50000 ] || fail "two committed --tx sends of 25000: $got stored"
after_kill "mq-send --tx -l killed on exit"

# --- mq-admin ack ------------------------------------------------------------------------------
mq-receive q --all -0 >/dev/null 2>&1
expect_rc 0 mq-send q leased
mq-receive q --lease 60s >/dev/null 2>"$T/token"
kill_at fdatasync 1 mq-admin ack "$(cat "$T/token")"
[ "$RC" = 137 ] || fail "mq-admin ack killed in its commit exited $RC"
expect_rc 0 mq-peek q --locked --all --template '{body}:{delivery_count}:{abort_count} '
expect_out 'leased:1:0 '
expect_rc 0 mq-admin locks --json
jq -e '.kind == "token" and .alive == true' "$T/out" >/dev/null || fail "the lease after a killed ack: $(cat "$T/out")"
expect_rc 0 mq-admin ack "$(cat "$T/token")"
expect_rc 1 mq-peek q --locked
after_kill "mq-admin ack"
finish
