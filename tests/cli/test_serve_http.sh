#!/bin/bash
# mq-admin serve --http: MSMQ's HTTP transport, the receiving end ([MC-MQSRM] 2.1, 3.1.5.1).
# The samples of [MC-MQSRM] section 4 POSTed with curl are stored as the spec describes them,
# receipts are understood and not stored; a stream's ordinals are stored once and in order
# across a restart of serve, a replay and a gap answered 200 and not stored; bad requests get
# their status, nothing half-stored, and the endpoint goes on serving the others.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/bg.sh"

FIX=$MQ_SRC/tests/fixtures/srmp
command -v curl >/dev/null || { skip "curl is not installed"; }

expect_rc 0 mq-admin create simpleq
expect_rc 0 mq-admin create tsimpleq --transactional
expect_rc 0 mq-admin create small --max-message-size 1k
expect_rc 0 mq-admin create other

serve() {
  start mq-admin serve --http 127.0.0.1:0 --request-timeout 2s "$@"
  SERVE=$PID
  PORT=
  until_true 10 grep -qs "listening on" "$T/bg.$SERVE.err" || fail "serve did not start"
  PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/bg.$SERVE.err")
}
stop_serve() {
  kill -TERM "$(tool_pid "$SERVE")"
  wait "$SERVE"
  local rc=$?
  [ "$rc" = 0 ] || fail "serve exited $rc on SIGTERM: $(cat "$T/bg.$SERVE.err")"
}
# body_of FIXTURE: the sample without its HTTP request line and headers (they end at a blank
# line, or, in 4.3 as printed, at the first boundary line).
body_of() {
  python3 -c '
import sys
lines = open(sys.argv[1], "rb").read().split(b"\r\n")
for i, l in enumerate(lines[1:], 1):
    if l == b"":
        i += 1
        break
    if l.startswith(b"--"):
        break
sys.stdout.buffer.write(b"\r\n".join(lines[i:]))' "$1"
}
# post FIXTURE [PATH]: POSTs the sample's body with its Content-Type to its path (or PATH);
# the HTTP status in $CODE, the answer in $T/resp.
post() {
  local f=$1 path=${2:-} ct
  body_of "$f" >"$T/body"
  ct=$(grep -a -m1 '^Content-Type:' "$f" | sed 's/^Content-Type: //; s/\r$//')
  [ -n "$path" ] || path=$(head -1 "$f" | awk '{print $2}')
  CODE=$(curl -s -o "$T/resp" -w '%{http_code}' -H "Content-Type: $ct" \
    -H 'SOAPAction: "MSMQMessage"' --data-binary @"$T/body" "http://127.0.0.1:$PORT$path")
}
expect_post() {
  local want=$1
  shift
  post "$@"
  [ "$CODE" = "$want" ] || fail "POST of $(basename "$1") ${2:-}: HTTP $CODE, expected $want: $(cat "$T/resp")"
}
count() { mq-admin stat "$1" --json | jq -r .messages; }

# A small capture server of this test, which keeps each POST: the receipts serve posts.
mkdir "$T/receipts"
start python3 -c '
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    n = 0
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        H.n += 1
        with open(os.path.join(sys.argv[1], "%03d" % H.n), "wb") as f:
            f.write(self.path.encode() + b"\n" + self.headers["Content-Type"].encode() + b"\n" + body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$T/receipts"
CAPTURE=$PID
until_true 10 test -s "$T/bg.$CAPTURE.out" || fail "the capture server did not start"
CPORT=$(cat "$T/bg.$CAPTURE.out")
serve
# The samples, as printed.
expect_post 200 "$FIX/4.1-simple.txt"
[ ! -s "$T/resp" ] || fail "a 200 answer has a body: $(cat "$T/resp")"
expect_post 200 "$FIX/4.2-msmq-element.txt"
# 4.3 asks for a delivery receipt at http://machine1/...: here the capture server.
sed "s|http://machine1/MSMQ/private\$/receipts|http://127.0.0.1:$CPORT/msmq/private\$/admin|g" \
  "$FIX/4.3-receipt-requests.txt" >"$T/4.3.txt"
expect_post 200 "$T/4.3.txt"
delivered() { grep -qs '<deliveryReceipt>' "$T/receipts/"*; }
until_true 10 delivered || fail "no delivery receipt for 4.3"
f=$(grep -l '<deliveryReceipt>' "$T/receipts/"* | head -1)
for want in '^/msmq/private\$/admin$' '<Class>2</Class>' '<id>uuid:1@00000000-0000-0000-0000-000000000008</id></deliveryReceipt>' \
  '<receivedAt>2' "<to>http://127.0.0.1:$CPORT/msmq/private"; do
  grep -q "$want" "$f" || fail "the delivery receipt lacks $want: $(cat "$f")"
done
rm -f "$T/receipts/"*
[ "$(count simpleq)" = 3 ] || fail "simpleq holds $(count simpleq) messages, expected 3"
expect_rc 0 mq-receive simpleq --columns label
expect_out $'mqsender label\n'
expect_rc 0 mq-admin export simpleq
jq -se 'map(select(.body | contains("<orderId>3</orderId>"))) | length == 1 and .[0].priority == 3 and .[0].hash_algorithm == 32772' "$T/out" >/dev/null ||
  fail "4.2's message lost its properties: $(cat "$T/out")"
# Receipts are not messages: a delivery receipt here says what the POST's answer said; a
# commitment receipt to a queue this store does not have (4.3's receipts) is dropped
# (test_http_receipts: to one it has, an acknowledgement).
expect_post 200 "$FIX/4.3-delivery-receipt.txt" /msmq/private\$/simpleq
expect_post 200 "$FIX/4.3-commitment-receipt.txt"
[ "$(count simpleq)" = 2 ] || fail "a receipt was stored as a message"
# A cut-short sample (1.3.12's body is not printed): 400, nothing stored.
expect_post 400 "$FIX/1.3.12-example.txt"
grep -q 'truncated\|MIME' "$T/resp" || fail "1.3.12's refusal does not say why: $(cat "$T/resp")"
[ "$(count simpleq)" = 2 ] || fail "a truncated document was stored"

# A stream: 1 and 2, a replay of 1, serve restarted, 2 again and 3; each stored once, in order.
# The samples' <expiresAt> (the time to be received, with <Msmq>) is in 2007: they would expire
# as soon as stored. The same documents, thirty years later.
for n in 1 2 3; do
  sed "s/>2007/>2037/g; s|http://machine1/MSMQ/private\$/receipts<b>SenderStream=XRntV</b>|http://127.0.0.1:$CPORT/msmq/private\$/order_queue\$|" \
    "$FIX/4.4-stream-$n.txt" >"$T/stream-$n.txt"
done
grep -q "127.0.0.1:$CPORT" "$T/stream-1.txt" || fail "the stream's <sendReceiptsTo> was not replaced"
# last_receipt: the <lastOrdinal> of the newest receipt the capture server holds.
last_receipt() {
  local f
  f=$(ls "$T/receipts" | tail -1)
  [ -n "$f" ] && sed -n 's/.*<lastOrdinal>\([0-9]*\)<\/lastOrdinal>.*/\1/p' "$T/receipts/$f"
}
expect_post 200 "$T/stream-1.txt"
expect_post 200 "$T/stream-2.txt"
expect_post 200 "$T/stream-1.txt"
# The stream receipt: half a second after the last of them, covering ordinal 2.
receipt_is() { [ "$(last_receipt)" = "$1" ]; }
until_true 10 receipt_is 2 || fail "no stream receipt for ordinal 2: $(last_receipt)"
f=$T/receipts/$(ls "$T/receipts" | tail -1)
grep -q '^/msmq/private\$/order_queue\$$' "$f" || fail "the receipt went to $(head -1 "$f")"
grep -q '^text/xml' "$f" || fail "the receipt is not text/xml: $(sed -n 2p "$f")"
for want in '<action>MSMQ:QM Ordering Ack</action>' '<Class>255</Class>' \
  '<streamId>uid:2744e4e1-2b48-43e8-b441-42745f280d53\\4839986701558349830</streamId>' \
  "<to>http://127.0.0.1:$CPORT/msmq/private\\\$/order_queue\\\$</to>" '<via>http://127.0.0.1:'; do
  grep -q "$want" "$f" || fail "the receipt lacks $want: $(cat "$f")"
done
# It is an SRMP document mq reads back as a receipt.
(printf 'Content-Type: text/xml\r\n\r\n'; tail -n +3 "$f") >"$T/receipt.xml"
expect_rc 0 mq-admin import simpleq --format srmp <"$T/receipt.xml"
expect_err_match "1 stream or delivery receipts skipped"
[ "$(count simpleq)" = 2 ] || fail "a receipt imported as a message"
stop_serve
serve
expect_post 200 "$T/stream-2.txt"
expect_post 200 "$T/stream-3.txt"
expect_post 200 "$T/stream-3.txt"
# After the restart the receipt goes where the first message said (kept in the store).
until_true 10 receipt_is 3 || fail "no stream receipt for ordinal 3 after a restart"
expect_rc 0 mq-peek tsimpleq --all -l
expect_out $'First Message\nMessage 0\nLast Message\n'
# A gap: ordinal 5 after 3 (4 never came) is ignored, answered 200, and not stored.
sed 's/<current>3<\/current>/<current>5<\/current>/; s/<previous>2<\/previous>/<previous>4<\/previous>/' \
  "$T/stream-3.txt" >"$T/stream-5.txt"
grep -q '<current>5</current>' "$T/stream-5.txt" || fail "the gap document was not made"
expect_post 200 "$T/stream-5.txt"
[ "$(count tsimpleq)" = 3 ] || fail "an ordinal after a gap was stored: $(count tsimpleq) messages"
grep -q 'ordinal 5 of stream .* ignored' "$T/bg.$SERVE.err" || fail "the gap was not noted"
# Its stream receipts are understood, never stored.
expect_post 200 "$FIX/4.4-stream-receipt-1.txt" /msmq/private\$/tsimpleq
[ "$(count tsimpleq)" = 3 ] || fail "a stream receipt was stored as a message"

# Bad requests: each its status and a reason; nothing stored.
before=$(count simpleq)
code() { curl -s -o "$T/resp" -w '%{http_code}' "$@"; }
[ "$(code "http://127.0.0.1:$PORT/msmq/private\$/simpleq")" = 405 ] || fail "GET is not 405"
[ "$(code -d x "http://127.0.0.1:$PORT/other/path")" = 404 ] || fail "a path outside /msmq is not 404"
expect_post 400 "$FIX/4.1-simple.txt" /msmq/private\$/nosuchq
grep -q 'no such queue' "$T/resp" || fail "a missing queue is not named: $(cat "$T/resp")"
expect_post 400 "$FIX/4.1-simple.txt" '/msmq/private$/simpleq;poison'
[ "$(code -H 'Content-Type: application/json' -d '{}' \
  "http://127.0.0.1:$PORT/msmq/private\$/simpleq")" = 400 ] || fail "JSON is not refused with 400"
# Wrong boundary: the header names one the body does not use.
body_of "$FIX/4.1-simple.txt" >"$T/body"
[ "$(code -H 'Content-Type: multipart/related; boundary="other"; type=text/xml' \
  --data-binary @"$T/body" "http://127.0.0.1:$PORT/msmq/private\$/simpleq")" = 400 ] ||
  fail "a wrong boundary is not 400"
# Truncated: the first 300 bytes of a good document.
head -c 300 "$T/body" >"$T/cut"
[ "$(code -H 'Content-Type: multipart/related; boundary="MSMQ - SOAP boundary, 53287"; type=text/xml' \
  --data-binary @"$T/cut" "http://127.0.0.1:$PORT/msmq/private\$/simpleq")" = 400 ] ||
  fail "a truncated document is not 400"
# Not SRMP, and a billion laughs: a DTD is refused before any entity is read.
printf '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><l>&c;</l>' >"$T/laughs"
[ "$(code -H 'Content-Type: text/xml' --data-binary @"$T/laughs" \
  "http://127.0.0.1:$PORT/msmq/private\$/simpleq")" = 400 ] || fail "a DTD is not refused"
grep -q 'DTD' "$T/resp" || fail "the DTD refusal does not say so: $(cat "$T/resp")"
[ "$(code -H 'Content-Type: text/xml' --data-binary '<a>not srmp</a>' \
  "http://127.0.0.1:$PORT/msmq/private\$/simpleq")" = 400 ] || fail "a non-SRMP envelope is not 400"
# Too large for the queue: refused by its Content-Length, before the body is read.
head -c 2000000 /dev/zero >"$T/big"
[ "$(code -H 'Content-Type: multipart/related; boundary="b"' --data-binary @"$T/big" \
  "http://127.0.0.1:$PORT/msmq/private\$/small")" = 413 ] || fail "a 2 MB body to a 1k queue is not 413"
# A slow client, a byte a second: 408 after the request timeout (2s), while others are served.
python3 "$MQ_SRC/tests/cli/slow_post.py" "$PORT" >"$T/slow" &
slow=$!
expect_post 200 "$FIX/4.1-simple.txt"  # served meanwhile
wait $slow
grep -q '408' "$T/slow" || fail "a slow client got '$(cat "$T/slow")', not 408"
[ "$(count simpleq)" = $((before + 1)) ] || fail "a refused request stored something"
expect_rc 0 mq-admin check

# --queue: only those queues.
stop_serve
grep -q 'requests: .* messages stored' "$T/bg.$SERVE.err" || fail "no summary at the end"
serve --queue other
expect_post 400 "$FIX/4.1-simple.txt"
grep -q 'does not serve' "$T/resp" || fail "a queue not served is not said: $(cat "$T/resp")"
expect_post 200 "$FIX/4.1-simple.txt" /msmq/other
[ "$(count other)" = 1 ] || fail "/msmq/other (a public queue's path) was not stored"
stop_serve

# Socket activation (mq-serve.socket): the listening socket from systemd (LISTEN_FDS), no
# --http; both at once is refused.
if command -v systemd-socket-activate >/dev/null; then
  sport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  start systemd-socket-activate -E MQ_STORE -E PATH -l "127.0.0.1:$sport" mq-admin serve
  ACT=$PID
  PORT=$sport
  until_true 10 grep -qs "Listening on" "$T/bg.$ACT.err" || fail "systemd-socket-activate did not listen"
  expect_post 200 "$FIX/4.1-simple.txt" /msmq/other
  [ "$(count other)" = 2 ] || fail "a socket-activated serve did not store the message"
  grep -q "listening on 127.0.0.1:$sport" "$T/bg.$ACT.err" || fail "serve did not name the socket it was given"
  kill -TERM "$(tool_pid "$ACT")" 2>/dev/null
  wait "$ACT"
  # Both: refused (systemd-socket-activate starts the tool at the first connection).
  start systemd-socket-activate -E MQ_STORE -E PATH -l "127.0.0.1:$sport" mq-admin serve \
    --http 127.0.0.1:0
  ACT=$PID
  until_true 10 grep -qs "Listening on" "$T/bg.$ACT.err" || fail "systemd-socket-activate did not listen"
  curl -s -m 5 -o /dev/null "http://127.0.0.1:$sport/" || true
  wait "$ACT"
  rc=$?
  [ "$rc" = 2 ] || fail "--http under socket activation exited $rc, expected 2"
  grep -q 'both name sockets' "$T/bg.$ACT.err" || fail "no reason: $(cat "$T/bg.$ACT.err")"
fi
# A descriptor passed as systemd's that is no listening socket.
expect_rc 2 sh -c 'LISTEN_PID=$$ LISTEN_FDS=1 exec mq-admin serve 3</dev/null'
expect_err_match 'descriptor 3 .* is not a listening stream socket'

# Options: --http and a bad address.
expect_rc 2 mq-admin serve
expect_err_match 'give --http'
expect_rc 2 mq-admin serve --http 127.0.0.1:99999
expect_err_match 'port'
finish
