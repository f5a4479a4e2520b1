#!/bin/bash
# Receipts to a machine no link reaches ([MC-MQSRM] 2.2.6.2, 2.2.6.3): the delivery receipt of
# a message that came over HTTP, and its commitment receipt when it is received, wait in
# system;receipts until mq-admin serve has posted them: a serve killed while the machine is
# unreachable loses none, the next one posts them, and they end there as acknowledgements.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

command -v curl >/dev/null || skip "curl is not installed"

# serve_on STORE [PORT]: a serve of STORE (on a free port, or PORT): $PORT, its job in $PID.
serve_on() {
  start mq-admin --store "$1" serve --http "127.0.0.1:${2:-0}"
  PORT=
  until_true 10 grep -qs "listening on" "$T/bg.$PID.err" ||
    fail "serve did not start: $(cat "$T/bg.$PID.err")"
  PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/bg.$PID.err")
}
count() { mq-admin --store "$1" stat "$2" --json | jq -r .messages; }

FAR=$T/far
expect_rc 0 mq-admin init
expect_rc 0 mq-admin create acks
expect_rc 0 mq-admin --store "$FAR" init
expect_rc 0 mq-admin --store "$FAR" create q
serve_on "$MQ_STORE"
HERE=$PORT
HERE_SERVE=$PID
serve_on "$FAR"
FAR_SERVE=$PID
FARPORT=$PORT
expect_rc 0 mq-admin link add far --url "http://127.0.0.1:$FARPORT/msmq" \
  --receipts-url "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"

# This machine's serve is down: the far side's receipts cannot be posted. The far store has no
# link back: its serve posts them, from system;receipts.
killtree "$(tool_pid "$HERE_SERVE")"
expect_rc 0 mq-send --ack full-reach-queue,full-receive --admin-queue acks -L one far:q one
one_id=$(mq-peek 'out;far' --json | jq -r .id)
expect_rc 0 mq-admin forward far --once
[ "$(mq-peek acks --json | jq -r .class)" = ack_reach_queue ] || fail "no ACK_REACH_QUEUE here"
expect_rc 0 mq-receive acks
# There: the delivery receipt, then (received) the commitment receipt, in system;receipts.
until_true 10 grep -qs "receipts to http://127.0.0.1:$HERE/msmq/private\$/acks failed" \
  "$T/bg.$FAR_SERVE.err" || fail "serve did not say the receipt failed: $(cat "$T/bg.$FAR_SERVE.err")"
[ "$(count "$FAR" 'system;receipts')" = 1 ] || fail "system;receipts holds $(count "$FAR" 'system;receipts')"
[ "$(mq-receive --store "$FAR" q)" = one ] || fail "the far store did not have one"
[ "$(count "$FAR" 'system;receipts')" = 2 ] || fail "no commitment receipt waits: $(count "$FAR" 'system;receipts')"
# (each waits out its retry delay: export shows them all)
[ "$(mq-admin --store "$FAR" export 'system;receipts' -q | jq -r .destination_queue | sort -u)" = \
  "DIRECT=http://127.0.0.1:$HERE/msmq/private\$/acks" ] || fail "the receipts go elsewhere: $(mq-admin --store "$FAR" export 'system;receipts' -q)"

# The far serve is killed while it holds them; they stay.
killtree "$(tool_pid "$FAR_SERVE")"
[ "$(count "$FAR" 'system;receipts')" = 2 ] || fail "receipts lost with serve"
# Both ends again: the receipts are posted, and end here as the acknowledgement (the delivery
# receipt is understood: the forward's 200 made the ACK_REACH_QUEUE already).
serve_on "$MQ_STORE" "$HERE"
HERE_SERVE=$PID
serve_on "$FAR" "$FARPORT"
FAR_SERVE=$PID
drained() { [ "$(count "$FAR" 'system;receipts')" = 0 ]; }
until_true 10 drained || fail "the receipts were not posted: $(count "$FAR" 'system;receipts') left; $(cat "$T/bg.$PID.err")"
[ "$(mq-peek acks --json --all | jq -r .class)" = ack_receive ] ||
  fail "acks: $(mq-peek acks --json --all)"
[ "$(mq-peek acks --correlation "$one_id" --json | jq -r .class)" = ack_receive ] ||
  fail "the ack is not for $one_id: $(mq-peek acks --json --all)"

# Receipts to a machine that is down do not hold up the others: 300 (more than serve posts at
# once) to a port where nothing listens, then one to this machine, which comes at once.
DEAD=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_rc 0 mq-admin link set far --receipts-url "http://127.0.0.1:$DEAD/msmq/private\$/order_queue\$"
expect_rc 0 mq-admin --store "$FAR" create q3
seq 300 | mq-send -l --ack full-reach-queue --admin-queue acks far:q
expect_rc 0 mq-admin forward far --once
expect_rc 0 mq-admin link set far --receipts-url "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"
expect_rc 0 mq-send --ack full-receive --admin-queue acks -L three far:q3 three
three_id=$(mq-peek 'out;far' --json | jq -r .id)
expect_rc 0 mq-admin forward far --once
[ "$(mq-receive --store "$FAR" q3)" = three ] || fail "the far store did not have three"
acked() { [ "$(mq-peek acks --correlation "$three_id" --json | jq -r .class)" = ack_receive ]; }
until_true 10 acked || fail "the receipt for three waited behind those to a machine that is down: $(count "$FAR" 'system;receipts') wait there"
[ "$(count "$FAR" 'system;receipts')" = 300 ] || fail "$(count "$FAR" 'system;receipts') receipts wait, expected 300"
# Each is tried again later (the queue's retry delay, which mq-admin set changes) and says why.
mq-admin --store "$FAR" export 'system;receipts' -q >"$T/waiting"
jq -se "map(select(.abort_count >= 1 and (.last_failure | test(\"POST to http://127.0.0.1:$DEAD/msmq/private.*acks\")))) | length > 0" "$T/waiting" >/dev/null ||
  fail "no failed receipt records its failure: $(head -c 600 "$T/waiting")"
expect_rc 0 mq-admin --store "$FAR" purge 'system;receipts'

# system;receipts disabled: serve says so and goes on; enabled again, the receipt goes.
expect_rc 0 mq-admin --store "$FAR" set 'system;receipts' --status off
expect_rc 0 mq-send --ack full-receive --admin-queue acks -L four far:q3 four
four_id=$(mq-peek 'out;far' --json | jq -r .id)
expect_rc 0 mq-admin forward far --once
[ "$(mq-receive --store "$FAR" q3)" = four ] || fail "the far store did not have four"
until_true 10 grep -qs "system;receipts is disabled" "$T/bg.$FAR_SERVE.err" ||
  fail "serve did not say system;receipts is disabled: $(cat "$T/bg.$FAR_SERVE.err")"
kill -0 "$(tool_pid "$FAR_SERVE")" || fail "serve ended: $(cat "$T/bg.$FAR_SERVE.err")"
expect_rc 0 mq-admin --store "$FAR" set 'system;receipts' --status on
acked4() { [ "$(mq-peek acks --correlation "$four_id" --json | jq -r .class)" = ack_receive ]; }
until_true 10 acked4 || fail "the receipt for four did not come once system;receipts was enabled"

# serve killed while it posts receipts: each comes again, none is lost. A slow capture server
# (it keeps each POST as it comes, and answers 5 s later) takes the delivery receipts of 200
# messages; the far serve is killed while all wait for their answers, and started again: it
# posts each again, and system;receipts ends empty.
mkdir "$T/cap"
start python3 -c '
import http.server, os, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        name = os.path.join(sys.argv[1], "%d.%d" % (time.monotonic_ns(), os.getpid()))
        with open(name + ".tmp", "wb") as f:
            f.write(body)
        os.rename(name + ".tmp", name)
        time.sleep(5)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer.request_queue_size = 256
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$T/cap"
CAP_JOB=$PID
until_true 10 test -s "$T/bg.$CAP_JOB.out" || fail "the capture server did not start"
CAP=$(cat "$T/bg.$CAP_JOB.out")
cited() { cat "$1"/*[0-9] 2>/dev/null | grep -o '<id>[^<]*</id></deliveryReceipt>' | sort -u | wc -l; }
expect_rc 0 mq-admin link set far --receipts-url "http://127.0.0.1:$CAP/msmq/private\$/order_queue\$"
seq 200 | mq-send -l --ack full-reach-queue --admin-queue acks far:q3
expect_rc 0 mq-admin forward far --once
all_came() { [ "$(cited "$T/cap")" = 200 ]; }
until_true 10 all_came || fail "serve posted $(cited "$T/cap") of the 200 receipts"
killtree "$(tool_pid "$FAR_SERVE")"
mkdir "$T/cap0"
mv "$T/cap"/*[0-9] "$T/cap0/"
[ "$(count "$FAR" 'system;receipts')" = 200 ] || fail "$(count "$FAR" 'system;receipts') receipts kept, expected 200"
serve_on "$FAR" "$FARPORT"
FAR_SERVE=$PID
until_true 30 drained || fail "$(count "$FAR" 'system;receipts') receipts left after the restart"
[ "$(cited "$T/cap")" = 200 ] || fail "after the restart the receipts cite $(cited "$T/cap") messages, expected 200"
expect_rc 0 mq-admin link set far --receipts-url "http://127.0.0.1:$HERE/msmq/private\$/order_queue\$"
expect_rc 0 mq-admin --store "$FAR" purge q3

# A receipt the other side refuses (4xx: no retry can succeed) is dropped, not kept for ever.
killtree "$(tool_pid "$HERE_SERVE")"
start python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(400)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$HERE"
until_true 10 curl -s -o /dev/null "http://127.0.0.1:$HERE/" || fail "the refusing server did not start"
expect_rc 0 mq-send --ack full-reach-queue --admin-queue acks -L two far:q two
expect_rc 0 mq-admin forward far --once
until_true 10 grep -qs "the receipt to http://127.0.0.1:$HERE/msmq/private\$/acks was refused (HTTP 400): dropped" \
  "$T/bg.$FAR_SERVE.err" || fail "no refusal: $(cat "$T/bg.$FAR_SERVE.err")"
until_true 10 drained || fail "a refused receipt stays"
