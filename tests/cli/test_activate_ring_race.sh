#!/bin/bash
# The activator's missed-doorbell race (issue 13, defect 1): a receiver that finds nothing
# (exit 1) makes mq-watch --exec idle only if no doorbell rang while it ran. Here the receiver
# it starts finds the queue empty (someone else took the message), and a new message arrives
# after that receiver looked but before it exits: the activator must start another receiver
# for it at once, not wait for a next ring that never comes.
#
# mq-watch runs the mq-receive beside its own executable, so the test runs a copy of mq-watch
# in a directory whose mq-receive is a wrapper around the real one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"
mkdir "$T/bin"
ln "$MQ_BIN/mq-watch" "$T/bin/mq-watch" 2>/dev/null || cp "$MQ_BIN/mq-watch" "$T/bin/mq-watch"
cat >"$T/bin/mq-receive" <<WRAP
#!/bin/sh
# The first receiver: someone else takes the message first, the real receive finds nothing,
# and a new message arrives before this receiver exits.
if mkdir "$T/first" 2>/dev/null; then
  "$MQ_BIN/mq-receive" -s "$STORE" q >/dev/null
  "$MQ_BIN/mq-receive" "\$@"
  rc=\$?
  "$MQ_BIN/mq-send" -s "$STORE" q late
  sleep 0.5
  exit \$rc
fi
exec "$MQ_BIN/mq-receive" "\$@"
WRAP
chmod +x "$T/bin/mq-receive"

expect_rc 0 mq-admin create q
start "$T/bin/mq-watch" q --exec sh -c 'cat >>"$0/done"' "$T"
sleep 0.3
expect_rc 0 mq-send q early
until_true 10 test -d "$T/first" || fail "the activator did not start a receiver"
until_true 10 grep -qsx late "$T/done" ||
  fail "a message that arrived while a receiver that found nothing was ending waited for good"
grep -qs early "$T/done" && fail "the message someone else took was processed too"
finish
