#!/bin/bash
# A reader waiting for a wall-clock deadline (a delayed message) sleeps on an absolute timer of
# the real-time clock that a step of the clock cancels: when the clock is set it looks again
# and sleeps until the deadline as the clock now reads it, instead of keeping a relative
# timeout computed before the step (issue 13, defect 6). The step here is of zero length (the
# clock set to its own reading), so nothing else on the machine notices.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"
command -v strace >/dev/null || skip "strace is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"
set_clock() {
  python3 -c 'import time; time.clock_settime(time.CLOCK_REALTIME, time.clock_gettime(time.CLOCK_REALTIME))'
}
set_clock 2>/dev/null || skip "this machine does not let the test set the clock (CAP_SYS_TIME)"
arms() { grep -c 'timerfd_settime(.*TFD_TIMER_ABSTIME|TFD_TIMER_CANCEL_ON_SET' "$T/trace"; }
armed() { [ "$(arms)" -ge "$1" ]; }

expect_rc 0 mq-send --create q --delay 30s later
start strace -f -o "$T/trace" -e trace=timerfd_settime,read mq-receive q --wait 20s
until_true 10 armed 1 || fail "the waiting reader never armed a wall-clock timer: $(tail -5 "$T/trace")"
before=$(arms)
set_clock
until_true 10 grep -q 'ECANCELED' "$T/trace" || fail "setting the clock did not wake the reader"
until_true 10 armed $((before + 1)) || fail "the reader did not look again and re-arm after the clock was set"
# It goes on waiting: the message is still 30 s away.
[ -s "$T/bg.$PID.out" ] && fail "the reader printed '$(cat "$T/bg.$PID.out")' before the message was due"
expect_rc 0 mq-admin stat q --json
grep -q '"delayed":1' "$T/out" || fail "the delayed message is no longer delayed: $(cat "$T/out")"
finish
