#!/bin/bash
# test_bridge_restart.sh: the broker restarts while both bridges run with --follow: they
# report the lost connection, reconnect with backoff and finish: every message exactly once.
# A bridge given --once stops on the lost connection after --retry with exit 10, nothing lost.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"
. "$(dirname "$0")/rabbit.sh"
rabbit_start || { echo "cannot start RabbitMQ" >&2; exit 1; }
BG_TIMEOUT=600
N=3000

B=$T/storeb
mq-admin init >/dev/null && mq-admin -s "$B" init >/dev/null
mq-admin create src --max-retries 0 && mq-admin -s "$B" create dst --dedup-window 1h ||
  fail "cannot create queues"
mq-admin bridge out src --amqp "$AMQP_URL" --exchange mqx --routing-key rq --declare || fail "declare"
seq -f "r-%g" 1 $((N / 2)) | mq-send -l src || fail "send"
start mq-admin bridge out src --amqp "$AMQP_URL" --exchange mqx --routing-key rq --follow --batch 50
OUT=$PID
start mq-admin -s "$B" bridge in dst --amqp "$AMQP_URL" --from rq --follow --batch 50
IN=$PID
sleep 0.3
rabbit_restart || fail "restart"
seq -f "r-%g" $((N / 2 + 1)) $N | mq-send -l src || fail "send"
for ((i = 0; i < 1200; i++)); do
  n=$(mq-admin -s "$B" stat dst --json | jq .messages)
  [ "$n" -ge "$N" ] && break
  sleep 0.1
done
sleep 1
kill -TERM "$(tool_pid "$OUT")" "$(tool_pid "$IN")"
expect_bg 0 "$OUT"
grep -q "connected again" "$T/err" || fail "bridge out did not report a reconnection: $(cat "$T/err")"
expect_bg 0 "$IN"
grep -q "connected again" "$T/err" || fail "bridge in did not report a reconnection: $(cat "$T/err")"
mq-peek -s "$B" dst --all --template '{body}\n' | sort >"$T/got"
seq -f "r-%g" 1 $N | sort >"$T/want"
cmp -s "$T/want" "$T/got" || fail "not exactly once after the restart: $(diff "$T/want" "$T/got" | head -5)"
mq-admin stat src --json | jq -e '.messages == 0 and .locked == 0' >/dev/null || fail "src not empty"

# --once with the broker gone: exit 10 after --retry, the message still in src.
mq-send src "stays" || fail "send"
rabbit_stop
expect_rc 10 mq-admin bridge out src --amqp "$AMQP_URL" --exchange mqx --routing-key rq --once
expect_err_match 'cannot connect: connection refused or host unreachable \(MQ_BROKER_UNAVAILABLE 0xE00E0020\)$'
expect_rc 0 mq-receive src
expect_out "stays"
finish
