#!/bin/bash
# A waiter woken by a lock file's close looks again a little later (issue 13, defect 4): Linux
# queues IN_CLOSE_WRITE before it drops the closing file's flock, so the first look can still
# see the lease held. Simulated here in that order: an event on the locks directory while the
# lease is held, then the lease released with no event at all (flock -u by the command, which
# holds the lease's descriptor): a waiting mq-receive must still get the message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"
command -v flock >/dev/null || skip "flock(1) (util-linux) is missing"

has() { [ -s "$1" ]; }

expect_rc 0 mq-admin create q
expect_rc 0 mq-send q m1
# CMD: finds the descriptor of its lease's lock file, reports it, releases the flock when told
# to (the description stays open, so no close event), then waits to be killed.
CMD='for f in /proc/$$/fd/*; do
  case $(readlink "$f") in "$MQ_STORE"/locks/lease.*) fd=${f##*/}; readlink "$f" >"$0/lease" ;; esac
done
while [ ! -e "$0/go" ]; do sleep 0.02; done
flock -u "$fd"
touch "$0/released"
sleep 30'
start mq-receive q --exec sh -c "$CMD" "$T"
until_true 10 has "$T/lease" || fail "the command has no lease descriptor"
lease=$(cat "$T/lease")
start mq-receive q -w 20s
waiter=$PID
wait_blocked "$waiter" poll || fail "the waiter did not block"
# The event first (an append-open of the lease file, closed at once: IN_CLOSE_WRITE) ...
: >>"$lease"
sleep 0.3  # ... the waiter looks and sees the lease still held ...
touch "$T/go"  # ... then the release, which no event announces.
until_true 5 test -e "$T/released" || fail "the command did not release the lease: $(cat "$T"/bg.*.err)"
t0=$(date +%s%3N)
until_true 5 eval '! kill -0 '"$waiter"' 2>/dev/null' || fail "the waiter missed the release (still waiting 5 s later)"
wait "$waiter"
rc=$?
t1=$(date +%s%3N)
[ "$rc" = 0 ] || fail "the waiter exited $rc: $(cat "$T/bg.$waiter.err")"
[ "$(cat "$T/bg.$waiter.out")" = m1 ] || fail "the waiter printed '$(cat "$T/bg.$waiter.out")'"
((t1 - t0 < 3000)) || fail "the waiter took $((t1 - t0)) ms after the release"
finish
